// The diagnosis engine on synthetic traces: its edge cases (nesting, unions, missing or partial records,
// warm-up, a host stand-in device).
#include <gtest/gtest.h>

#include "diagnose_traces.h"

namespace stalldx::diagnose {
namespace {

using namespace test_traces;

TEST(EdgeCases, OverlappingStreamsAreAUnionNotASum) {
  Builder b;
  b.range(Role::step, "step", 0, 1, 0, 0);
  b.launch("cudaMemcpyAsync", 0.1, 0.2, ActivityKind::memcpy_h2d, "h2d", 5, 15, 0, 13, MemKind::pinned, 1 << 20);
  b.launch("cudaLaunchKernel", 0.2, 0.3, ActivityKind::kernel, "k", 10, 20, 0, 7);
  const Report r = diagnose(b.t);
  EXPECT_NEAR(r.device_busy_union_ms, 15, 1e-9);
  EXPECT_NEAR(r.device_busy_sum_ms, 20, 1e-9);
  EXPECT_NEAR(r.steps[0].window_ms, 20, 1e-9);
  EXPECT_NEAR(r.steps[0].busy_ms, 15, 1e-9);
  EXPECT_NEAR(r.steps[0].stall_ms, 5, 1e-9);
}

TEST(EdgeCases, NestedRangesAreNotAddedTwice) {
  Builder b;
  b.range(Role::step, "step", 0, 12, 0, 0);
  b.range(Role::user, "data_load", 0, 11, 0, 0);
  b.range(Role::wait_batch, "wait_batch", 1, 9, 0, 0);
  b.range(Role::retrieval, "read", 1, 9, -1, 0, 1, 0.1);
  b.launch("cudaLaunchKernel", 11, 11.5, ActivityKind::kernel, "k", 12, 20, 0);
  const Report r = diagnose(b.t);
  const StepDiagnosis& s = r.steps[0];
  EXPECT_NEAR(s.stall_ms, 12, 1e-6);
  EXPECT_NEAR(s.class_ms[0] + s.class_ms[1] + s.class_ms[2] + s.class_ms[3], s.stall_ms, 1e-6);
  EXPECT_NEAR(s.class_ms[0], 8, 1e-6);    // the wait, once — not again as part of data_load
  // The launch call, and the step outside data_load before the kernel it launched began: the device
  // idled until the consumer launched (host-paced).
  EXPECT_NEAR(s.class_ms[2], 1.0, 1e-6);
  EXPECT_NEAR(s.class_ms[3], 3.0, 1e-6);  // data_load outside the wait: a range of unknown meaning
}

// A loop that makes its own batches (num_workers=0): the Python hook times the wait and the consumer's
// decode of that batch by one clock read, so the two have the same span. The decode is the inner one
// whichever comes first in the trace (before, the sort's luck made some steps "producers not recorded").
TEST(EdgeCases, AWaitAndTheConsumersOwnDecodeOfTheSameSpanAreDecoding) {
  for (const bool decode_first : {false, true}) {
    Builder b;
    double t = 0;
    for (int k = 0; k < 24; ++k) {
      b.range(Role::step, "step", t, t + 30, k, k);
      if (decode_first) b.range(Role::decode, "decode + transform", t, t + 20, k, k, 0, 19.5);
      b.range(Role::wait_batch, "batch made in the loop", t, t + 20, k, k, 0, 19.5);
      if (!decode_first) b.range(Role::decode, "decode + transform", t, t + 20, k, k, 0, 19.5);
      b.launch("cudaLaunchKernel", t + 20, t + 20.1, ActivityKind::kernel, "k", t + 20.1, t + 30, k);
      t += 30;
    }
    const Report r = diagnose(b.t);
    EXPECT_EQ(count(r, Verdict::decoding), static_cast<int>(r.steps.size())) << "decode first: " << decode_first;
    for (const StepDiagnosis& s : r.steps) {
      EXPECT_NEAR(s.class_ms[1], 20, 1e-6) << "step " << s.step;
      EXPECT_NEAR(s.class_ms[3], 0, 1e-6) << "step " << s.step;
    }
  }
}

// A batch made by four threads in parallel (samples, not batches, per thread): three decode 12 ms each,
// the fourth reads one slow file for 40 ms, then decodes 1 ms. The batch was ready when that thread
// finished: its wait is retrieval. Split by the whole batch's work (40 of 77 ms reading) it was a 52/48
// mixed step — what made spike steps flip between retrieval and mixed from run to run.
TEST(EdgeCases, ABatchMadeInParallelWaitsOnItsLastThread) {
  Builder b;
  for (std::uint32_t th = 2; th <= 4; ++th) b.t.threads.push_back({th, 100 + th, "worker"});
  double t = 0;
  for (int k = 0; k < 12; ++k) {
    b.range(Role::step, "step", t, t + 51, k, k);
    b.range(Role::wait_batch, "wait_batch", t, t + 41, k, k);
    for (std::uint32_t th = 1; th <= 3; ++th) b.range(Role::decode, "decode", t, t + 12, -1, k, th, 11.5);
    b.range(Role::retrieval, "read", t, t + 40, -1, k, 4, 0.2);
    b.range(Role::decode, "decode", t + 40, t + 41, -1, k, 4, 0.95);
    b.launch("cudaLaunchKernel", t + 41, t + 41.1, ActivityKind::kernel, "k", t + 41.1, t + 51, k);
    t += 51;
  }
  const Report r = diagnose(b.t);
  EXPECT_EQ(count(r, Verdict::retrieval), 12);
  EXPECT_GT(r.steps[5].class_ms[0], 0.9 * r.steps[5].stall_ms) << r.steps[5].evidence;
}

TEST(EdgeCases, DeviceWorkFinishingAfterItsHostRange) {
  Builder b;
  for (int k = 0; k < 3; ++k) {
    const double s = k * 10.0;
    b.range(Role::step, "step", s, s + 1, k, k);
    b.launch("cudaLaunchKernel", s + 0.5, s + 0.6, ActivityKind::kernel, "k", s + 0.6, s + 9.6, k);  // ends 8.6 ms after the step
  }
  const Report r = diagnose(b.t);
  EXPECT_NEAR(r.steps[1].window_begin_ms, 9.6, 1e-6);
  EXPECT_NEAR(r.steps[1].window_end_ms, 19.6, 1e-6);
  EXPECT_NEAR(r.steps[1].busy_ms, 9, 1e-6);
}

TEST(EdgeCases, UnmatchedCorrelationsLowerConfidence) {
  Trace t = input_bound(Role::retrieval, 4, 5, 0.1);
  DeviceActivity orphan;
  orphan.begin_ns = 1;
  orphan.end_ns = 2;
  orphan.correlation = 999999;
  orphan.step = -1;
  t.activities.push_back(orphan);
  // Start-up work before the first step (model set-up, cuDNN autotuning) is no gap in the records.
  DeviceActivity setup = orphan;
  setup.begin_ns = -5'000'000;
  setup.end_ns = -4'000'000;
  setup.correlation = 999998;
  t.activities.push_back(setup);
  const Report r = diagnose(t);
  EXPECT_EQ(r.coverage.unmatched_device, 1u);
  EXPECT_NE(confidence_text(r.coverage).find("1 device records have no step"), std::string::npos) << confidence_text(r.coverage);
}

TEST(EdgeCases, DroppedRecordsAreSaid) {
  Trace t = input_bound(Role::retrieval, 4, 5, 0.1);
  t.meta.dropped_host = 17;
  const Report r = diagnose(t);
  EXPECT_NE(confidence_text(r.coverage).find("17 host"), std::string::npos);
  EXPECT_NE(report_text(r).find("dropped host 17"), std::string::npos);
}

TEST(EdgeCases, NoDeviceRecordsMeansNoGuess) {
  Trace t = input_bound(Role::retrieval, 4, 5, 0.1);
  t.activities.clear();
  t.meta.cupti = false;
  const Report r = diagnose(t);
  EXPECT_FALSE(r.coverage.device_records);
  for (const StepDiagnosis& s : r.steps) EXPECT_EQ(s.verdict, Verdict::no_device_records);
  EXPECT_NEAR(r.steps[1].stall_ms, 5.2, 1e-6);  // the host's wait + submit time is still shown
  EXPECT_FALSE(r.coverage.notes.empty());
}

// A loop that waits little, with no device: its evidence and question speak of the loop's own work, not
// of device work "queued in time" (before: a CPU-only run's steps said so, and "the device had work queued").
TEST(EdgeCases, NoDeviceRecordsAndLittleWaitingSpeaksOfTheLoopsOwnWork) {
  Trace t = input_bound(Role::decode, 6, 0.05, 0.9);
  t.activities.clear();
  t.calls.clear();
  t.meta.cupti = false;
  const Report r = diagnose(t);
  for (const StepDiagnosis& s : r.steps) {
    EXPECT_EQ(s.verdict, Verdict::no_device_records);
    EXPECT_EQ(s.evidence.find("queued"), std::string::npos) << s.evidence;
    EXPECT_NE(s.evidence.find("the loop's own work took the rest"), std::string::npos) << s.evidence;
    EXPECT_EQ(s.next_question.find("the device had work queued"), std::string::npos) << s.next_question;
  }
}

TEST(EdgeCases, EmptyAndOneStepTraces) {
  const Report empty = diagnose(Trace{});
  EXPECT_TRUE(empty.steps.empty());
  EXPECT_FALSE(report_text(empty).empty());
  EXPECT_FALSE(report_json(empty).empty());
  const Report one = diagnose(input_bound(Role::decode, 1, 5, 0.9));
  ASSERT_EQ(one.steps.size(), 1u);
  bool short_capture = false;
  for (const Advised& a : one.summary.advice) short_capture |= a.kind == Advice::record_longer;
  EXPECT_TRUE(short_capture);
}

TEST(EdgeCases, WarmupIsReportedApart) {
  Trace t = input_bound(Role::retrieval, 11, 5, 0.1);
  t.meta.config["warmup"] = "3";
  const Report r = diagnose(t);
  EXPECT_EQ(r.summary.warmup_steps, 3);
  EXPECT_EQ(r.summary.steady_steps, 8);
  EXPECT_TRUE(r.steps[2].warmup);
  EXPECT_FALSE(r.steps[3].warmup);
}

TEST(EdgeCases, HostStandinReadsConsumerBound) {
  Builder b;
  for (int k = 0; k < 4; ++k) {
    const double s = k * 10.0;
    b.range(Role::step, "step", s, s + 10, k, k);
    b.range(Role::user, "standin_compute", s, s + 10, k, k);
    DeviceActivity a;
    a.begin_ns = Builder::ns(s);
    a.end_ns = Builder::ns(s + 10);
    a.device = -1;
    a.kind = ActivityKind::standin;
    a.step = k;
    b.t.activities.push_back(a);
  }
  const Report r = diagnose(b.t);
  EXPECT_TRUE(r.coverage.standin);
  EXPECT_EQ(count(r, Verdict::device_bound), 4);
  EXPECT_EQ(r.summary.dominant, Verdict::device_bound);
}

}  // namespace
}  // namespace stalldx::diagnose
