// The diagnosis of a sampled recording on a synthetic trace: steps inside device windows judged on the
// device's timeline, the others from host records, a wait outside a window bounded by the device's own
// work a step, "carried from the nearest window", and the live line's window count.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/diagnose/live.h"
#include "stalldx/record/merge.h"
#include "stalldx/record/sampling.h"

namespace stalldx::record {
namespace {

// A trace of 10 steps whose device records exist only in steps 0-2 and 6-7 (the windows). Steps 3-5 and
// 8-9 have none: step 4 (20 ms, twice the others) waited 16 ms on its input, more than the device's work
// (the window steps' busy time) leaves of it idle, so it is judged from host records; step 9 waited 5 ms
// of 10 ms; the others did not wait (step 8 only submitted work) and carry the verdict of the nearest
// window step. Failed before the fix for step 8 (its submit range made it "submission" from host
// records). Step 6 opens a window after earlier steps: the device may still run their unrecorded work,
// so it is judged from host records (and carries).
constexpr std::int64_t kMs = 1'000'000;
// Steps of 10 ms; step 4 (and with `long_step7` step 7) of 20 ms.
std::int64_t step_begin(int s, bool long_step7 = false) {
  return 1'000 * kMs + s * 10 * kMs + (s > 4 ? 10 * kMs : 0) + (long_step7 && s > 7 ? 10 * kMs : 0);
}

Trace sampled_trace(bool launch_bound_windows, bool long_step7 = false) {
  const auto step_begin = [&](int s) { return ::stalldx::record::step_begin(s, long_step7); };
  Trace t;
  t.meta.host = t.meta.nvtx = t.meta.cupti = true;
  t.threads = {{0, 10, "main"}};
  const auto step = t.intern("step"), wait = t.intern("wait_batch"), launch = t.intern("cudaLaunchKernel"), k = t.intern("kernel");
  const auto driver_launch = t.intern("cuLaunchKernel");
  const std::int64_t ms = kMs;
  std::uint32_t corr = 1;
  for (int s = 0; s < 10; ++s) {
    const std::int64_t b = step_begin(s), e = step_begin(s + 1);
    t.ranges.push_back({b, e, 0, step, Role::step});
    if (s == 4) t.ranges.push_back({b, b + 16 * ms, 0, wait, Role::wait_batch});
    if (s == 9) t.ranges.push_back({b, b + 5 * ms, 0, wait, Role::wait_batch});
    // Host submission work outside a window says nothing without the device's timeline: not a stall there.
    if (s == 8) t.ranges.push_back({b + ms, b + 6 * ms, 0, t.intern("h2d"), Role::submit});
    const bool in_window = s <= 2 || s == 6 || s == 7;
    if (!in_window) continue;
    // Device-bound: one long kernel queued at the step's start. Launch-bound: kernels with idle gaps
    // between the launches (the host sets the pace).
    const int kernels = launch_bound_windows ? 200 : 1;
    for (int i = 0; i < kernels; ++i) {
      const std::int64_t at = b + i * (launch_bound_windows ? 45'000 : 0);
      t.calls.push_back({at, at + 5'000, 0, launch, corr});
      t.calls.push_back({at + 1'000, at + 4'000, 0, driver_launch, 100'000 + corr});  // the runtime's own driver call: no work of its own
      DeviceActivity a;
      a.kind = ActivityKind::kernel;
      a.name = k;
      a.correlation = corr++;
      a.begin_ns = at + 10'000;
      a.end_ns = launch_bound_windows ? a.begin_ns + 20'000 : e;
      t.activities.push_back(a);
    }
  }
  set_device_windows(t.meta, SamplePlan{0, 3, 6},
                     {{step_begin(0) - ms, step_begin(3) + ms / 2, 1}, {step_begin(6) - ms / 2, step_begin(8) + ms / 2, 1}});
  assign_steps(t);
  t.meta.origin_ns = step_begin(0) - ms;
  return t;
}

// The trace's diagnosis with no warm-up steps: every step of these short traces is judged.
diagnose::Report diagnose_every_step(const Trace& t) {
  diagnose::Thresholds th;
  th.warmup_steps = 0;
  return diagnose::diagnose(t, th);
}

TEST(SampledDiagnosis, StepsOutsideWindowsAreJudgedFromHostRecordsOrCarryTheNearestWindow) {
  for (const bool launch_bound : {false, true}) {
    const Trace t = sampled_trace(launch_bound);
    const diagnose::Report rep = diagnose_every_step(t);
    ASSERT_EQ(rep.steps.size(), 10u);
    const diagnose::Verdict window_verdict = launch_bound ? diagnose::Verdict::submission : diagnose::Verdict::device_bound;
    for (int s : {0, 1, 2, 7}) {
      EXPECT_EQ(rep.steps[s].basis, diagnose::StepBasis::device) << s;
      EXPECT_EQ(rep.steps[s].verdict, window_verdict) << s << " " << rep.steps[s].evidence;
    }
    EXPECT_EQ(rep.steps[4].basis, diagnose::StepBasis::host_records);
    EXPECT_EQ(rep.steps[4].verdict, diagnose::Verdict::input) << "a wait with no producers recorded: "
                                                                     << rep.steps[4].evidence;
    // Of step 4's 16 ms wait at most 20 − busy idled the device: 10 ms beside a 10 ms kernel a step,
    // all 16 beside 200 launches of 20 us.
    EXPECT_NEAR(rep.steps[4].stall_ms, launch_bound ? 16.0 : 10.0, 0.05) << rep.steps[4].evidence;
    std::vector<std::pair<int, int>> carried{{3, 2}, {5, 7}, {6, 7}, {8, 7}};
    if (launch_bound) {  // 5 ms of waiting while the device had 4 ms of work a step: input
      EXPECT_EQ(rep.steps[9].basis, diagnose::StepBasis::host_records);
      EXPECT_EQ(rep.steps[9].verdict, diagnose::Verdict::input) << rep.steps[9].evidence;
    } else {  // 5 ms of waiting in a step the device's 10 ms of work filled: it idled nothing
      carried.emplace_back(9, 7);
      EXPECT_NE(rep.steps[9].evidence.find("waited 5.00 ms, but the device runs about 9.99 ms of work a step (step 7, in a window): at most 0.00 of the step's 10.00 ms idled it"), std::string::npos)
          << rep.steps[9].evidence;
    }
    for (auto [s, from] : carried) {
      EXPECT_EQ(rep.steps[s].basis, diagnose::StepBasis::carried) << s;
      EXPECT_EQ(rep.steps[s].carried_from, from) << s;
      EXPECT_EQ(rep.steps[s].verdict, window_verdict) << s;
    }
    EXPECT_TRUE(rep.steps[6].at_window_edge);
    EXPECT_FALSE(rep.steps[5].at_window_edge);
    EXPECT_NE(rep.steps[6].evidence.find("partial"), std::string::npos) << rep.steps[6].evidence;
    EXPECT_TRUE(rep.coverage.sampled);
    EXPECT_EQ(rep.coverage.steps_in_windows, 4u);
    EXPECT_EQ(rep.coverage.steps_carried, carried.size());
    EXPECT_EQ(rep.coverage.confidence, diagnose::Confidence::lowered);
    EXPECT_NE(diagnose::report_text(rep).find("[carried] "), std::string::npos);
    const auto j = nlohmann::json::parse(diagnose::report_json(rep));
    EXPECT_EQ(j["steps"][3]["basis"], "carried");
    EXPECT_EQ(j["coverage"]["sampling"]["steps_carried"], carried.size());
    EXPECT_EQ(j["steps"][6]["at_window_edge"], true);
  }
}

// A window's last steps whose device work ran after the window closed (the device behind the host): no
// records of their work, so no timeline to judge them on. Failed before the fix: the step's window was
// 0 ms long and its verdict "device-bound" (stall 0 under the threshold), while it waited on its input.
TEST(SampledDiagnosis, AWindowStepWhoseWorkWasNotRecordedIsJudgedFromHostRecords) {
  Trace t = sampled_trace(false, true);
  const std::int64_t b = step_begin(7, true);
  t.ranges.push_back({b, b + 16 * kMs, 0, t.intern("wait_batch"), Role::wait_batch});
  std::erase_if(t.activities, [](const DeviceActivity& a) { return a.step == 7; });
  assign_steps(t);
  const diagnose::Report rep = diagnose_every_step(t);
  ASSERT_EQ(rep.steps.size(), 10u);
  EXPECT_EQ(rep.steps[7].basis, diagnose::StepBasis::host_records);
  EXPECT_EQ(rep.steps[7].verdict, diagnose::Verdict::input) << rep.steps[7].evidence;
  EXPECT_EQ(rep.coverage.steps_in_windows, 3u);
}

// The device's work a step is the nearest window step's own work, not its busy time: a window step whose
// device time also ran an earlier step's work (a window's first step, the device behind) would make a
// wait look hidden by work that was not this loop's per step. Step 7 of the launch-bound trace runs 4 ms
// of its own kernels and part of a late kernel of step 6; step 5 waits 7 of its 10 ms: 6 ms of it idled
// the device (10 − 4), not 10 − step 7's busy time.
TEST(SampledDiagnosis, TheDevicesWorkAStepIsTheWindowStepsOwnWork) {
  Trace t = sampled_trace(true);
  const std::int64_t b7 = step_begin(7), b5 = step_begin(5);
  const auto corr = static_cast<std::uint32_t>(900'000);
  t.calls.push_back({step_begin(6) + kMs, step_begin(6) + kMs + 5'000, 0, t.intern("cudaLaunchKernel"), corr});
  DeviceActivity a;
  a.kind = ActivityKind::kernel;
  a.name = t.intern("late kernel");
  a.correlation = corr;
  a.begin_ns = b7 + 5 * kMs;
  a.end_ns = b7 + 10 * kMs;
  t.activities.push_back(a);
  t.ranges.push_back({b5, b5 + 7 * kMs, 0, t.intern("wait_batch"), Role::wait_batch});
  assign_steps(t);
  const diagnose::Report rep = diagnose_every_step(t);
  ASSERT_EQ(rep.steps.size(), 10u);
  EXPECT_NEAR(rep.steps[7].work_ms, 4.0, 0.01);
  EXPECT_GT(rep.steps[7].busy_ms, rep.steps[7].work_ms + 1) << rep.steps[7].evidence;
  EXPECT_EQ(rep.steps[5].verdict, diagnose::Verdict::input) << rep.steps[5].evidence;
  EXPECT_NEAR(rep.steps[5].stall_ms, 6.0, 0.01) << rep.steps[5].evidence;
  EXPECT_NE(rep.steps[5].evidence.find("about 4.00 ms of work a step (step 7, in a window)"), std::string::npos) << rep.steps[5].evidence;
}

// The device's work a step is a median over the nearest window's steps, not one step's: in the window of
// steps 0-2 steps 0 and 1 run 2 ms of kernels, step 2 (nearest to step 3) fills its 10 ms. Step 3 waits 6
// of its 10 ms: beside 2 ms of work a step that idled the device (input); with step 2's work alone as the
// bound it would have been 0.01 ms (device-bound, carried) — what this test failed on before.
TEST(SampledDiagnosis, TheDevicesWorkAStepIsAMedianOverTheNearestWindow) {
  Trace t = sampled_trace(false);
  for (DeviceActivity& a : t.activities)
    if (a.begin_ns < step_begin(2)) a.end_ns = a.begin_ns + 2 * kMs;
  const std::int64_t b3 = step_begin(3);
  t.ranges.push_back({b3, b3 + 6 * kMs, 0, t.intern("wait_batch"), Role::wait_batch});
  assign_steps(t);
  const diagnose::Report rep = diagnose_every_step(t);
  ASSERT_EQ(rep.steps.size(), 10u);
  EXPECT_NEAR(rep.steps[2].work_ms, 9.99, 0.01);
  EXPECT_NEAR(rep.steps[1].work_ms, 2.0, 0.01);
  EXPECT_EQ(rep.steps[3].basis, diagnose::StepBasis::host_records) << rep.steps[3].evidence;
  EXPECT_EQ(rep.steps[3].verdict, diagnose::Verdict::input) << rep.steps[3].evidence;
  EXPECT_NEAR(rep.steps[3].stall_ms, 6.0, 0.01) << rep.steps[3].evidence;
  // Step 4's 16 ms wait of 20: bounded by the same median (2 ms), 16 ms of it idled the device.
  EXPECT_NEAR(rep.steps[4].stall_ms, 16.0, 0.01) << rep.steps[4].evidence;
  // Step 9 (nearest: window 6-7, whose measured step is 7 alone) keeps the single step's words.
  EXPECT_NE(rep.steps[9].evidence.find("(step 7, in a window)"), std::string::npos) << rep.steps[9].evidence;
}

// The live line counts device windows only once device records exist: a program that never used CUDA
// has windows of host records only (before, a CPU-only run said "[device windows so far: 13]").
TEST(LiveLine, CountsDeviceWindowsOnlyWithDeviceRecords) {
  for (const bool cupti : {false, true}) {
    Trace t = sampled_trace(false);
    t.meta.cupti = cupti;
    const diagnose::LiveLine l = diagnose::live_line(t, t.meta.origin_ns, step_begin(10) + kMs, t.meta.origin_ns, 0);
    EXPECT_EQ(l.steps, 10);
    EXPECT_EQ(l.device_windows, cupti ? 2u : 0u);
    EXPECT_EQ(diagnose::live_text(l).find("device windows") != std::string::npos, cupti) << diagnose::live_text(l);
  }
}

}  // namespace
}  // namespace stalldx::record
