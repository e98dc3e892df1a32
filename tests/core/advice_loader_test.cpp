// Advice on how a loop uses its DataLoader: a new iterator every step (next(iter(loader))), worker
// start-up every epoch — found from the batch ids the Python hook writes (iterator, pass, index).
#include <gtest/gtest.h>

#include <cstdint>

#include "advice_support.h"
#include "stalldx/record/part_format.h"

namespace stalldx::diagnose {
namespace {
using namespace advice_tests;

// Steps that each wait for the first batch of a pass (batch ids as the Python hook writes them: iterator
// << 40 | pass << 24 | index): a new iterator every step (pass 0) advises making it once or persistent
// workers; the same iterator restarted (pass k) never proposes persistent workers, which it has; a loop
// over one iterator (index k) gets neither. With no device records the advice is still given.
TEST(Advice, ANewIteratorEveryStepIsNamed) {
  const auto loop = [](int shape, bool device) {  // 0: new iterator a step, 1: one iterator restarted, 2: one pass
    Loop l({});
    double t = 0;
    for (int k = 0; k < 12; ++k) {
      const std::int64_t batch = shape == 0 ? std::int64_t{k} << 40 : shape == 1 ? (std::int64_t{1} << 40) | (std::int64_t{k} << 24)
                                                                                  : (std::int64_t{1} << 40) | k;
      l.range(Role::decode, "start", t, t + 10, -1, -1, 0, 10);
      l.range(Role::step, "step", t, t + 30.2, k, k);
      l.range(Role::wait_batch, "wait_batch", t + 10, t + 30, k, batch);
      l.range(Role::decode, "decode", t + 10, t + 30, -1, batch, 1, 19);
      if (device) l.call("cudaLaunchKernel", t + 30, t + 30.1, k, ActivityKind::kernel, "k", t + 30.1, t + 30.2);
      t += 30.2;
    }
    l.t.meta.cupti = device;
    return diagnose(l.t);
  };
  for (const bool device : {true, false}) {
    const Report fresh = loop(0, device), restarted = loop(1, device), one = loop(2, device);
    ASSERT_TRUE(has(fresh, Advice::iterator_per_step)) << all(fresh);
    EXPECT_NE(all(fresh).find("persistent_workers=True"), std::string::npos) << all(fresh);
    EXPECT_NE(fresh.steps[6].next_question.find("started a new DataLoader iterator"), std::string::npos) << fresh.steps[6].next_question;
    EXPECT_EQ(one.steps[6].next_question.find("DataLoader iterator"), std::string::npos) << one.steps[6].next_question;
    ASSERT_TRUE(has(restarted, Advice::iterator_per_step)) << all(restarted);
    EXPECT_EQ(all(restarted).find("persistent_workers"), std::string::npos) << all(restarted);
    EXPECT_FALSE(has(one, Advice::iterator_per_step)) << all(one);
  }
}

// Epochs of 8 steps; each epoch's first step waits for a new iterator's first batch. When those steps
// cost 60 ms against 20 ms (worker start-up: 20 % of the steady window) the advice is persistent workers;
// not when they cost what the others do, and never for a persistent iterator (its epochs are passes).
TEST(Advice, CostlyWorkerStartUpEachEpochAsksForPersistentWorkers) {
  const auto loop = [](double epoch_start_ms, bool persistent) {
    Loop l({});
    double t = 0;
    for (int k = 0; k < 24; ++k) {
      const std::int64_t epoch = k / 8, index = k % 8;
      const std::int64_t batch = persistent ? (std::int64_t{1} << 40) | (epoch << 24) | index : (epoch << 40) | index;
      const double wait = index == 0 ? epoch_start_ms - 5 : 15;
      l.range(Role::step, "step", t, t + wait + 5, k, k);
      l.range(Role::wait_batch, "wait_batch", t, t + wait, k, batch);
      l.range(Role::decode, "decode", t, t + wait, -1, batch, 1, wait * 0.95);
      l.call("cudaLaunchKernel", t + wait, t + wait + 0.1, k, ActivityKind::kernel, "k", t + wait + 0.1, t + wait + 5);
      t += wait + 5;
    }
    return diagnose(l.t);
  };
  const Report costly = loop(60, false), cheap = loop(22, false), kept = loop(60, true);
  EXPECT_TRUE(has(costly, Advice::worker_restarts)) << all(costly);
  EXPECT_NE(costly.steps[16].next_question.find("persistent_workers=True"), std::string::npos) << costly.steps[16].next_question;
  EXPECT_EQ(costly.steps[17].next_question.find("persistent_workers"), std::string::npos) << costly.steps[17].next_question;
  EXPECT_NE(all(costly).find("persistent_workers=True"), std::string::npos) << all(costly);
  EXPECT_FALSE(has(costly, Advice::iterator_per_step)) << all(costly);
  EXPECT_FALSE(has(cheap, Advice::worker_restarts)) << all(cheap);
  EXPECT_FALSE(has(kept, Advice::worker_restarts)) << all(kept);
}

// A training loop that runs a validation pass (another DataLoader, iterated without a backward pass, the
// hook's evaluation iterations) inside steps 4 and 8, its loader starting its worker processes each time:
// the advice says how much of the steady time that took and what of it waited on that loader, and the
// steps whose windows hold the passes ask about them; the same loop without the passes gets nothing of it (held-out
// loop with gradient accumulation and a validation loader, here, 2026-12-07).
TEST(Advice, EvaluationPassesInsideStepsAreNamedWithTheirLoadersCost) {
  const auto loop = [](double eval_wait_ms, bool with_eval, bool every_step = false) {  // each evaluation batch waited for eval_wait_ms
    Loop l({});
    double t = 0;
    for (int k = 0; k < 12; ++k) {
      const double s0 = t;
      l.range(Role::step, "step", s0, s0 + 0, k, k);  // its end set below
      const std::size_t step_index = l.t.ranges.size() - 1;
      l.range(Role::wait_batch, "wait_batch", t, t + 5, k, k);
      l.range(Role::decode, "decode", t - 20, t + 5, -1, k, 1, 24);
      l.call("cudaLaunchKernel", t + 5, t + 5.1, k, ActivityKind::kernel, "k", t + 5.1, t + 25);
      t += 25;
      if (with_eval && (every_step || k == 4 || k == 8)) {
        const std::int64_t serial = k + 1;
        l.range(Role::decode, record::kPythonIteratorStartName, t, t + 30, k, serial << 40, 0, 30);
        t += 30;
        for (int i = 0; i < 3; ++i) {
          const std::int64_t batch = serial << 40 | i;
          l.range(Role::user, record::kPythonEvalIterationName, t, t + eval_wait_ms + 2, k, batch);
          l.range(Role::wait_batch, "DataLoader __next__ (wait for batch)", t, t + eval_wait_ms, k, batch);
          l.range(Role::decode, "decode", t, t + eval_wait_ms, -1, batch, 1, eval_wait_ms * 0.95);
          t += eval_wait_ms + 2;
        }
      }
      l.t.ranges[step_index].end_ns = test_traces::Builder::ns(t);
    }
    return diagnose(l.t);
  };
  const Report eval = loop(20, true), none = loop(20, false);
  ASSERT_TRUE(has(eval, Advice::evaluation_in_steps)) << all(eval);
  EXPECT_NE(all(eval).find("evaluation inside 2 training steps: 6 iterations without a backward pass"), std::string::npos) << all(eval);
  EXPECT_NE(all(eval).find("120 ms of it waiting for the evaluation DataLoader's batches, 60 ms starting its worker processes (2 times)"),
            std::string::npos) << all(eval);
  EXPECT_NE(all(eval).find("persistent_workers=True on the evaluation DataLoader"), std::string::npos) << all(eval);
  // On the device's timeline a pass after step 8's launch is idle time in step 9's window: step 9 asks.
  EXPECT_NE(eval.steps[9].next_question.find("evaluation pass"), std::string::npos) << eval.steps[9].next_question;
  EXPECT_EQ(eval.steps[8].next_question.find("evaluation pass"), std::string::npos) << eval.steps[8].next_question;
  EXPECT_EQ(eval.steps[7].next_question.find("evaluation pass"), std::string::npos) << eval.steps[7].next_question;
  EXPECT_FALSE(has(none, Advice::evaluation_in_steps)) << all(none);
  // The headline weighs the training steps: those two steps are left out of it, and it says so; its
  // shares are then the loop's without the passes. A pass in every step is the loop itself: kept.
  EXPECT_NE(eval.summary.headline.text.find("outside the 2 steps that ran an evaluation pass"), std::string::npos) << eval.summary.headline.text;
  EXPECT_EQ(eval.summary.headline.evaluation_steps, 2);
  EXPECT_NEAR(eval.summary.headline.input, none.summary.headline.input, 0.01) << eval.summary.headline.text << " / " << none.summary.headline.text;
  EXPECT_EQ(none.summary.headline.evaluation_steps, 0);
  EXPECT_EQ(none.summary.headline.text.find("evaluation"), std::string::npos) << none.summary.headline.text;
  const Report every = loop(20, true, true);
  ASSERT_TRUE(has(every, Advice::evaluation_in_steps)) << all(every);
  EXPECT_EQ(every.summary.headline.evaluation_steps, 0);
  EXPECT_GT(every.summary.headline.input, none.summary.headline.input + 0.2) << every.summary.headline.text;
}

// A loop advancing two DataLoaders every step (zip(labeled, unlabeled)), one worker each: the costly
// loader's batches take most of its waits, and "more workers" says which loader — by the order the loop
// advances them; a loop over one loader gets no such words (held-out semi-supervised loop, here,
// 2026-12-07: 2 workers on its costly loader ran it in 3.55 s against 4.75 s).
TEST(Advice, MoreWorkersNamesWhichOfTheZippedLoaders) {
  const auto loop = [](bool costly_first, bool two_loaders) {
    Loop l({}, 8);
    double t = 0;
    for (int k = 0; k < 12; ++k) {
      l.range(Role::step, "step", t, t + 20.2, k, k, 0, 1);
      double at = t;
      for (int place = 0; place < (two_loaders ? 2 : 1); ++place) {
        const bool costly = (place == 0) == costly_first || !two_loaders;
        const std::int64_t iterator = costly ? 2 : 1, wait = costly ? 14 : 1;
        const std::int64_t batch = iterator << record::kBatchIteratorShift | k;
        l.range(Role::wait_batch, "DataLoader __next__ (wait for batch)", at, at + wait, k, batch);
        l.range(Role::decode, "decode + transform", at - 5, at + wait, -1, batch, costly ? 1 : 2, (wait + 5) * 0.97);
        at += wait;
      }
      l.call("cudaLaunchKernel", at, at + 0.1, k, ActivityKind::kernel, "k", at + 0.1, at + 5);
      l.t.ranges[l.t.ranges.size() - (two_loaders ? 5 : 3)].end_ns = test_traces::Builder::ns(at + 5);
      t = at + 5;
    }
    return diagnose(l.t);
  };
  const Report second = loop(false, true), first = loop(true, true), one = loop(true, false);
  ASSERT_TRUE(has(second, Advice::more_workers)) << all(second);
  EXPECT_NE(all(second).find("more workers for the second of the 2 DataLoaders the loop advances every step (93% of its waits"),
            std::string::npos) << all(second);
  EXPECT_NE(all(first).find("more workers for the first of the 2 DataLoaders"), std::string::npos) << all(first);
  ASSERT_TRUE(has(one, Advice::more_workers)) << all(one);
  EXPECT_EQ(all(one).find("DataLoaders the loop advances"), std::string::npos) << all(one);
}

}  // namespace
}  // namespace stalldx::diagnose
