// Which ranges are a recorded program's steps when nobody said so (record/step_inference.h): named ranges,
// numbered families, the Python hook's loop, and the CUDA period of a program with no range at all.
#include <gtest/gtest.h>

#include <string>

#include "built_trace.h"
#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/record/merge.h"
#include "stalldx/record/part_format.h"
#include "stalldx/record/step_inference.h"

namespace stalldx::record {
namespace {
using testing::Built;

TEST(StepInference, ANumberedFamilyOnTheLaunchingThreadIsTheSteps) {
  Built b;
  for (int k = 0; k < 8; ++k) {
    b.range(0, "pass " + std::to_string(k), k * 10, k * 10 + 9);
    b.range(0, "part " + std::to_string(k), k * 10 + 2, k * 10 + 4);  // shorter: passed over
    b.range(1, "work " + std::to_string(k), k * 10, k * 10 + 9.5);    // another thread: not the launcher
    b.launch(0, k * 10 + 3, ActivityKind::kernel, "k");
  }
  const StepEvidence ev = infer_steps(b.t);
  EXPECT_EQ(ev.rule, StepRule::numbered_family);
  EXPECT_NE(ev.found.find("pass #"), std::string::npos) << ev.found;
  EXPECT_EQ(b.steps(), 8);
  ASSERT_EQ(ev.passed_over.size(), 2u);
  EXPECT_EQ(b.t.meta.config.at("steps_rule"), "numbered_family");
  for (const HostRange& r : b.t.ranges)
    if (r.role == Role::step) {
      EXPECT_EQ(b.t.name(r.name).rfind("pass ", 0), 0u);
    }
}

TEST(StepInference, FamiliesThatOverlapRepeatOneNumberOrAreTooFewAreNotSteps) {
  Built overlapping;
  for (int k = 0; k < 6; ++k) overlapping.range(0, "req " + std::to_string(k), k * 10, k * 10 + 25);
  EXPECT_EQ(infer_steps(overlapping.t).rule, StepRule::none);
  Built same;
  for (int k = 0; k < 6; ++k) same.range(0, "conv2d", k * 10, k * 10 + 5);
  EXPECT_EQ(infer_steps(same.t).rule, StepRule::none);
  Built few;
  for (int k = 0; k < 4; ++k) few.range(0, "pass " + std::to_string(k), k * 10, k * 10 + 5);
  const StepEvidence ev = infer_steps(few.t);
  EXPECT_EQ(ev.rule, StepRule::none);
  EXPECT_FALSE(ev.how_to_override.empty());
}

TEST(StepInference, NamedStepsWinThenFamiliesThenThePythonLoop) {
  Built b;
  for (int k = 0; k < 6; ++k) {
    b.range(0, kPythonLoopStepName, k * 10, k * 10 + 10, Role::step);
    b.range(0, "pass " + std::to_string(k), k * 10 + 1, k * 10 + 9);
  }
  EXPECT_EQ(infer_steps(b.t).rule, StepRule::numbered_family);
  int loop_steps = 0;
  for (const HostRange& r : b.t.ranges) loop_steps += r.role == Role::step && b.t.name(r.name) == kPythonLoopStepName;
  EXPECT_EQ(loop_steps, 0) << "the hook's iterations give way to the program's own numbered ranges";
  Built hook_only;
  for (int k = 0; k < 6; ++k) hook_only.range(0, kPythonLoopStepName, k * 10, k * 10 + 10, Role::step);
  EXPECT_EQ(infer_steps(hook_only.t).rule, StepRule::python_loop);
  EXPECT_EQ(hook_only.steps(), 6);
}

// zip(loader_a, loader_b): each DataLoader's iterations are the hook's steps, the second's beginning just
// after the first's. The loop ran 6 iterations, not 12 (before, the evidence said 12 while the report had 6).
TEST(StepInference, TwoDataLoadersReadInOneLoopAreOneStepAnIteration) {
  Built b;
  for (int k = 0; k < 6; ++k) {
    b.range(0, kPythonLoopStepName, k * 10, k * 10 + 10, Role::step);
    b.range(0, kPythonLoopStepName, k * 10 + 2, k * 10 + 12, Role::step);
  }
  const StepEvidence ev = infer_steps(b.t);
  EXPECT_EQ(ev.rule, StepRule::python_loop);
  EXPECT_EQ(ev.found.rfind("6 iterations of the loop over a DataLoader", 0), 0u) << ev.found;
  EXPECT_NE(ev.found.find("6 iterations of other DataLoaders"), std::string::npos) << ev.found;
  EXPECT_EQ(assign_steps(b.t), 6u) << "the second loader's iterations are not steps";
  EXPECT_EQ(b.steps(), 6);
}

// A step-named range inside each named step ("train_step" in "iteration k", as a held-out C loop had):
// 6 steps, and the inner ranges are the steps' work (compute), said so in the steps line.
TEST(StepInference, AStepNamedRangeInsideEachStepIsItsWork) {
  Built b;
  for (int k = 0; k < 6; ++k) {
    b.range(0, "iteration " + std::to_string(k), k * 10, k * 10 + 10, Role::step);
    b.range(0, "train_step", k * 10 + 6, k * 10 + 9, Role::step);
  }
  b.range(1, "train_step", 0, 1, Role::step);  // another thread: a user range
  const StepEvidence ev = infer_steps(b.t);
  EXPECT_EQ(ev.rule, StepRule::named);
  EXPECT_EQ(ev.found.rfind("6 ranges named as steps ('iteration 0', 'iteration 1', 'iteration 2', ...); 7 more", 0), 0u) << ev.found;
  EXPECT_NE(ev.found.find("('train_step'): the steps' work"), std::string::npos) << ev.found;
  EXPECT_EQ(assign_steps(b.t), 7u);
  EXPECT_EQ(b.steps(), 6);
  int compute = 0, user = 0;
  for (const HostRange& r : b.t.ranges) {
    compute += r.role == Role::compute;
    user += r.role == Role::user;
  }
  EXPECT_EQ(compute, 6);
  EXPECT_EQ(user, 1);
}

TEST(StepInference, WithNoRangesTheBatchSizedCopyMarksEachStep) {
  Built b(1);
  for (int k = 0; k < 7; ++k) {
    b.launch(0, k * 10, ActivityKind::memcpy_h2d, "copy", 4 << 20);  // the batch
    b.launch(0, k * 10 + 0.5, ActivityKind::memcpy_h2d, "copy", 1024);  // its labels
    for (int i = 0; i < 5; ++i) b.launch(0, k * 10 + 1 + i, ActivityKind::kernel, "k" + std::to_string(i));
  }
  const StepEvidence ev = infer_steps(b.t);
  EXPECT_EQ(ev.rule, StepRule::cuda_period);
  EXPECT_NE(ev.found.find("4194304-byte"), std::string::npos) << ev.found;
  EXPECT_EQ(b.steps(), 7);
  assign_steps(b.t);
  const diagnose::Report rep = diagnose::diagnose(b.t);
  EXPECT_EQ(rep.steps.size(), 7u);
  EXPECT_NE(diagnose::confidence_text(rep.coverage).find("period of the CUDA activity"), std::string::npos) << diagnose::confidence_text(rep.coverage);
}

// No range anywhere, steps inferred from the batch copies: the device idle with no CUDA call until the
// loop copies its next batch is the loop getting that batch (a held-out loop fed by a multiprocessing Pool
// read "submission-bound 91 %" before). Short host-paced gaps between many launches stay submission.
TEST(StepInference, TheIdleBeforeEachInferredBatchCopyIsInputNotSubmission) {
  const auto run = [](double wait_ms, int kernels) {
    Built b(1);
    double t = 0;
    for (int k = 0; k < 10; ++k) {
      t += wait_ms;
      b.launch(0, t, ActivityKind::memcpy_h2d, "copy", 4 << 20);
      for (int i = 0; i < kernels; ++i) b.launch(0, t + 1 + i, ActivityKind::kernel, "k" + std::to_string(i));
      t += 1 + kernels;
    }
    EXPECT_EQ(infer_steps(b.t).rule, StepRule::cuda_period);
    EXPECT_EQ(b.t.meta.config.at(kStepsBatchCopyBytesKey), "4194304");
    assign_steps(b.t);
    return diagnose::diagnose(b.t);
  };
  const diagnose::Report waits = run(20, 5);
  int input = 0;
  for (const diagnose::StepDiagnosis& s : waits.steps)
    if (!s.warmup && s.step > 0) {
      input += s.verdict == diagnose::Verdict::input;
      EXPECT_EQ(s.causes.front().cause, diagnose::Cause::before_batch_copy) << s.evidence;
    }
  EXPECT_EQ(input, 9);
  const diagnose::Report launches = run(0, 40);
  for (const diagnose::StepDiagnosis& s : launches.steps)
    if (!s.warmup && s.step > 0) {
      EXPECT_EQ(s.verdict, diagnose::Verdict::submission) << s.evidence;
    }
  // Named steps: the key is gone, the idle is what it was.
  Built named(1);
  for (int k = 0; k < 6; ++k) named.range(0, "step " + std::to_string(k), k * 10, k * 10 + 10, Role::step);
  named.t.meta.config[kStepsBatchCopyBytesKey] = "4194304";
  infer_steps(named.t);
  EXPECT_EQ(named.t.meta.config.count(kStepsBatchCopyBytesKey), 0u);
}

TEST(StepInference, WithNoCopiesTheKernelThatRecursOncePerPeriod) {
  Built b(1);
  for (int k = 0; k < 6; ++k) {
    b.launch(0, k * 10, ActivityKind::kernel, "embedding");
    for (int i = 0; i < 3; ++i) b.launch(0, k * 10 + 1 + i, ActivityKind::kernel, "gemm");
  }
  const StepEvidence ev = infer_steps(b.t);
  EXPECT_EQ(ev.rule, StepRule::cuda_period);
  EXPECT_NE(ev.found.find("embedding"), std::string::npos) << ev.found;
  EXPECT_EQ(b.steps(), 6);
}

// PyTorch runs the backward pass on an autograd thread of its own: that thread launches most device work,
// the loop's thread copies the batch and launches the forward pass. The copies still mark the steps, on
// the loop's thread (before, only the launching thread's copies counted: "no steps found").
TEST(StepInference, TheBatchCopyMarksTheStepsWhenAnotherThreadLaunchesTheBackwardPass) {
  Built b(2);
  for (int k = 0; k < 8; ++k) {
    const double at = k * 20 + (k % 3) * 4;  // waits for input of uneven length
    b.launch(0, at, ActivityKind::memcpy_h2d, "copy", 8 << 20);
    for (int i = 0; i < 3; ++i) b.launch(0, at + 1 + i, ActivityKind::kernel, "fwd" + std::to_string(i));
    for (int i = 0; i < 7; ++i) b.launch(1, at + 5 + i * 0.5, ActivityKind::kernel, "bwd" + std::to_string(i));
    b.launch(0, at + 9, ActivityKind::kernel, "sgd");
  }
  const StepEvidence ev = infer_steps(b.t);
  EXPECT_EQ(ev.rule, StepRule::cuda_period);
  EXPECT_NE(ev.found.find("8388608-byte host-to-device copy issued by thread 'main'"), std::string::npos) << ev.found;
  EXPECT_EQ(b.steps(), 8);
  for (const HostRange& r : b.t.ranges) EXPECT_EQ(r.thread, 0u) << "the steps are on the loop's thread";
}

// A feeder thread copies batches ahead of the loop into a queue (copies only, one more than the loop
// takes); the loop's forward and backward pass run on two threads at an uneven pace. The copies do not
// pace the steps; the kernel launched once an iteration with the same kernels between does, on the lane
// that launches it. A kernel launched three times an iteration (unequal parts) and one per layer (the
// loss and optimizer kernels in every fourth part) are passed over.
TEST(StepInference, WithCopiesOnAFeederThreadTheKernelWithTheSameWorkBetweenMarksTheSteps) {
  Built b(3);
  for (int k = 0; k < 10; ++k) b.launch(2, k * 15.0, ActivityKind::memcpy_h2d, "copy", 8 << 20);  // ahead of the loop
  double at = 3;
  for (int k = 0; k < 9; ++k) {
    at += (k % 4) * 7;  // waits of uneven length
    if (k % 2 == 0) b.launch(0, at - 0.5, ActivityKind::memcpy_h2d, "copy", 2048);  // the loop's own, every other step
    b.launch(0, at, ActivityKind::kernel, "embed");
    for (int layer = 0; layer < 4; ++layer) {
      b.launch(0, at + 0.2, ActivityKind::kernel, "attention");
      b.launch(0, at + 0.4, ActivityKind::kernel, "gemm");
      b.launch(0, at + 0.5, ActivityKind::kernel, "gemm");
      b.launch(0, at + 0.6, ActivityKind::kernel, "gemm");
      at += 1;
    }
    b.launch(0, at, ActivityKind::kernel, "loss");
    for (int i = 0; i < 5; ++i) b.launch(1, at + 1 + i, ActivityKind::kernel, "bwd" + std::to_string(i));
    at += 8;
  }
  const StepEvidence ev = infer_steps(b.t);
  EXPECT_EQ(ev.rule, StepRule::cuda_period);
  EXPECT_NE(ev.found.find("kernel 'embed' by thread 'main'"), std::string::npos) << ev.found;
  EXPECT_EQ(b.steps(), 9);
  for (const HostRange& r : b.t.ranges) EXPECT_EQ(r.thread, 0u);
}

// The first iterations autotune (more kernels); from then on the same work: still one step an iteration.
TEST(StepInference, AWarmUpWithOtherKernelsDoesNotHideThePeriod) {
  Built b(1);
  for (int k = 0; k < 12; ++k) {
    b.launch(0, k * 10, ActivityKind::kernel, "head");
    if (k < 2)
      for (int i = 0; i < 4; ++i) b.launch(0, k * 10 + 1 + i * 0.5, ActivityKind::kernel, "autotune");
    for (int i = 0; i < 3; ++i) b.launch(0, k * 10 + 4 + i, ActivityKind::kernel, "conv" + std::to_string(i));
  }
  const StepEvidence ev = infer_steps(b.t);
  EXPECT_EQ(ev.rule, StepRule::cuda_period);
  EXPECT_NE(ev.found.find("'head'"), std::string::npos) << ev.found;
  EXPECT_EQ(b.steps(), 12);
}

}  // namespace
}  // namespace stalldx::record
