// `record --sample`: the plan and the window scheduler (pure), the windows a program marks live with no
// device (NVTX steps only), the "carried from the nearest window" rule on a synthetic trace, and the
// live lines.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>
#include <sstream>

#include "recorded.h"
#include "spawned.h"
#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/record/part_format.h"
#include "stalldx/diagnose/live.h"
#include "stalldx/record/merge.h"
#include "stalldx/record/sampling.h"
#include "stalldx/trace_io.h"

namespace stalldx::record {
namespace {

TEST(SamplePlan, ParsesTheFormsAndRefusesWhatIsNotOne) {
  SamplePlan p;
  std::string error;
  ASSERT_TRUE(SamplePlan::parse("5/100", p, error)) << error;
  EXPECT_EQ(p.window, 5);
  EXPECT_EQ(p.period, 100);
  EXPECT_EQ(p.full, 0);
  ASSERT_TRUE(SamplePlan::parse("auto", p, error));
  EXPECT_EQ(p.text(), kAutoPlan);
  EXPECT_EQ(p.words(), "every step for the first 50, then 5 steps in every 100");
  ASSERT_TRUE(SamplePlan::parse("full", p, error));
  EXPECT_FALSE(p.samples());
  for (const char* bad : {"", "5", "0/10", "11/10", "a/b", "5/100+", "5/100+-1", "5/100x"}) {
    EXPECT_FALSE(SamplePlan::parse(bad, p, error)) << bad;
    EXPECT_EQ(error.rfind(std::string(bad) + ": ", 0), 0u) << "names the text (the caller names its option): " << error;
  }
}

TEST(WindowScheduler, AttachesAndDetachesAtTheStepsThePlanNames) {
  SamplePlan p;
  std::string error;
  ASSERT_TRUE(SamplePlan::parse("2/5+3", p, error));
  WindowScheduler w(p);
  EXPECT_TRUE(w.recording()) << "full steps first: on from the start";
  std::string edges;
  for (std::int64_t i = 0; i < 20; ++i) {
    const WindowAction a = w.on_boundary(i);
    if (a == WindowAction::attach) edges += fmt::format("+{} ", i);
    if (a == WindowAction::detach) edges += fmt::format("-{} ", i);
    if (a == WindowAction::prepare) edges += fmt::format("^{} ", i);
    if (a == WindowAction::release) edges += fmt::format("~{} ", i);
  }
  // Steps 0-2 full, then (i - 3) % 5 < 2: 3,4 on; 5,6,7 off; 8,9 on; ... Each attach is announced one
  // boundary ahead (^), where that boundary is not itself an edge; the boundary after a detach releases
  // the window's device records (~).
  EXPECT_EQ(edges, "-5 ~6 ^7 +8 -10 ~11 ^12 +13 -15 ~16 ^17 +18 ");
  WindowScheduler short_gap(SamplePlan{0, 2, 4});  // two steps between windows: the announcement releases
  std::string short_edges;
  for (std::int64_t i = 0; i < 9; ++i) {
    const WindowAction a = short_gap.on_boundary(i);
    if (a == WindowAction::release) short_edges += fmt::format("~{} ", i);
    if (a == WindowAction::prepare) short_edges += fmt::format("^{} ", i);
  }
  EXPECT_EQ(short_edges, "^3 ^7 ");
  WindowScheduler none(SamplePlan{0, 1, 10});
  EXPECT_FALSE(none.recording()) << "no full steps: off until the first window";
  EXPECT_EQ(none.on_boundary(0), WindowAction::attach);
  EXPECT_EQ(none.on_boundary(1), WindowAction::detach);
  EXPECT_EQ(none.on_boundary(10), WindowAction::attach);
  WindowScheduler tight(SamplePlan{0, 3, 4});  // one step between windows: it detaches and announces nothing
  EXPECT_EQ(tight.on_boundary(0), WindowAction::attach);
  EXPECT_EQ(tight.on_boundary(3), WindowAction::detach);
  EXPECT_EQ(tight.on_boundary(4), WindowAction::attach);
  WindowScheduler busy(SamplePlan{0, 3, 10});  // the recorder refuses the first attach: the next step asks again
  EXPECT_EQ(busy.on_boundary(0), WindowAction::attach);
  EXPECT_TRUE(busy.wants_next(0));
  busy.attach_refused();
  EXPECT_FALSE(busy.recording());
  EXPECT_EQ(busy.on_boundary(1), WindowAction::attach);
  EXPECT_EQ(busy.on_boundary(2), WindowAction::none);
  EXPECT_EQ(busy.on_boundary(3), WindowAction::detach);
  busy.on_boundary(10);
  busy.attach_refused();
  busy.on_boundary(11);
  busy.attach_refused();
  busy.on_boundary(12);
  EXPECT_FALSE(busy.wants_next(12)) << "the window's last step: the recorder waits rather than refuse";
  busy.attach_refused();  // refused all the same: the window is skipped, nothing to detach
  EXPECT_EQ(busy.on_boundary(13), WindowAction::none);
  WindowScheduler asked(SamplePlan{0, 1, 10, true});  // on demand: a capture is never announced
  asked.capture(2);
  EXPECT_EQ(asked.on_boundary(5), WindowAction::attach);
}

TEST(WindowMarks, PairsEdgesClosesTheOpenOneAndSkipsCutLines) {
  const std::string text =
      "plan\t2/5+3\n"
      "attach\t0\t1000\t-1\n"
      "detach\t0\t5000\t4\n"
      "garbage line\n"
      "attach\t1\t8000\t7\n"
      "detach\t1\t9000\t9\n"
      "attach\t2\t12000\t12\n"
      "detach\t3\t12500\t9223372036854775807\n"  // forged: no step of a run
      "detach\t2\t130";  // cut by a kill
  const WindowMarks m = parse_window_marks(text, 42, 20000);
  ASSERT_TRUE(m.plan);
  EXPECT_EQ(m.plan->text(), "2/5+3");
  ASSERT_EQ(m.windows.size(), 3u);
  EXPECT_EQ(m.windows[0].second, (DeviceWindow{1000, 5000, 42}));
  EXPECT_EQ(m.windows[2].second, (DeviceWindow{12000, 20000, 42})) << "still open: ends with the recording";
  TraceMeta meta;
  std::vector<DeviceWindow> ws;
  for (const auto& [n, w] : m.windows) ws.push_back(w);
  set_device_windows(meta, *m.plan, ws);
  std::size_t bad = 0;
  const auto back = device_windows(meta, &bad);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, ws);
  EXPECT_EQ(bad, 0u);
  meta.config[kWindowsKey] = "1:5-3,x,2:7-9";
  EXPECT_EQ(device_windows(meta, &bad)->size(), 1u);
  EXPECT_EQ(bad, 2u);
  EXPECT_FALSE(device_windows(TraceMeta{})) << "no key: not sampled";
  EXPECT_EQ(m.steps, (std::vector<StepMark>{{5000, 4}, {8000, 7}, {9000, 9}, {12000, 12}})) << "the start's edge (-1) is no step's";
}

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

#ifdef NVTX_LOOP
// nvtx_loop marks 20 "step" ranges; under --sample 2/5+3 the scheduler (in the injection library, no
// device) opens windows at steps 0 (the start), 8, 13 and 18 and closes them at 5, 10, 15 and the end.
// `--sample 2/5+3 -- nvtx_loop --steps …`: an option of optional value right before `--` (CLI11 took
// the `--` as the option's end, and the command's --steps as record's: "not expected").
TEST(RecordSample, AProgramWithNoDeviceMarksItsWindowsAtItsSteps) {
  const Recorded r = record("--steps 20 --workers 1 --read-ms 2 --decode-ms 0 --step-ms 1", "--live 0 --sample 2/5+3");
  ASSERT_EQ(r.rc, 0) << r.log;
  Trace t;
  ASSERT_TRUE(read_trace_file(r.trace_path, t).is_ok()) << r.log;
  EXPECT_EQ(t.meta.config[kSamplePlanKey], "2/5+3");
  const auto windows = device_windows(t.meta);
  ASSERT_TRUE(windows);
  std::vector<DeviceWindow> main;
  std::int64_t main_pid = 0;
  for (const ThreadInfo& th : t.threads)
    if (th.os_tid == th.pid && th.name != "cuda-thread") main_pid = main_pid ? main_pid : th.pid;
  std::map<std::int64_t, const HostRange*> steps;
  for (const HostRange& h : t.ranges)
    if (h.role == Role::step) steps[h.step] = &h;
  ASSERT_EQ(steps.size(), 20u);
  for (const DeviceWindow& w : *windows)
    if (w.pid == t.threads[steps.begin()->second->thread].pid) main.push_back(w);
  ASSERT_EQ(main.size(), 4u) << t.meta.config[kWindowsKey];
  const auto inside = [&](std::int64_t s) {
    for (const DeviceWindow& w : main)
      if (steps[s]->begin_ns >= w.begin_ns && steps[s]->end_ns <= w.end_ns) return true;
    return false;
  };
  const SamplePlan plan{3, 2, 5};
  for (std::int64_t s = 0; s < 20; ++s) EXPECT_EQ(inside(s), plan.records(s)) << "step " << s;
  // No CUDA in nvtx_loop: the windows are said to hold host records only.
  EXPECT_NE(r.log.find("device records sampled: every step for the first 3, then 2 steps in every 5; 4 windows in the trace (no process used "
                       "CUDA: they hold host records only)"),
            std::string::npos)
      << r.log;
}

// Live lines: a loop whose steps wait on slow reads prints lines whose input share is most of the time.
// The program runs at least 150 x 15 ms of sleeping reads: longer than two intervals of 1 s (the least).
TEST(RecordSample, LiveLinesReportTheInputShareWhileTheProgramRuns) {
  const std::string dir = stalldx::testing::temp_dir("live");
  const Recorded r = record("--steps 150 --workers 2 --read-ms 15 --decode-ms 0 --step-ms 1",
                            fmt::format("--live 1 --live-json {}/live.jsonl", dir));
  ASSERT_EQ(r.rc, 0) << r.log;
  EXPECT_NE(r.log.find("stalldx live 00:00:0"), std::string::npos) << r.log;
  std::ifstream in(dir + "/live.jsonl");
  std::string line;
  int lines = 0, with_steps = 0;
  while (std::getline(in, line)) {
    ++lines;
    const auto j = nlohmann::json::parse(line);
    if (j["steps"].get<int>() == 0) continue;
    ++with_steps;
    EXPECT_GT(j["share"]["input"].get<double>(), 0.5) << line;
    const auto& sh = j["share"];  // what the steps did not wait on is their own work: the shares make the whole
    EXPECT_NEAR(sh["input"].get<double>() + sh["submission"].get<double>() + sh["unattributed"].get<double>() + sh["own_work"].get<double>(),
                1.0, 0.01) << line;
    EXPECT_GT(j["steps_per_s"].get<double>(), 0) << line;
  }
  EXPECT_GE(lines, 1) << r.log;
  EXPECT_GE(with_steps, 1) << r.log;
}

// --on-demand: no window until `stalldx capture PID --steps 3`; then one window of three steps. Readiness,
// not sleeps: record prints the pid to capture; the window's detach mark in the parts folder says the
// capture is done, and only then is the (endless) program interrupted.
TEST(RecordSample, OnDemandRecordsNothingUntilCaptureAsksThenTheNextSteps) {
  const std::string dir = stalldx::testing::temp_dir("on-demand");
  stalldx::testing::Spawned rec({STALLDX_BINARY, "record", "--on-demand", "--live", "0", "--trace", dir + "/t.json", "--", NVTX_LOOP,
                                 "--steps", "1000000", "--workers", "1", "--read-ms", "3", "--announce"});
  ASSERT_TRUE(rec.wait_for_line("stalldx capture ")) << rec.stderr_text();
  const std::string& err = rec.stderr_text();
  const auto at = err.find("stalldx capture ") + std::string("stalldx capture ").size();
  const std::string pid = err.substr(at, err.find(' ', at) - at);
  ASSERT_TRUE(rec.wait_for_line("step 5 done")) << rec.stderr_text();
  const int rc = std::system(fmt::format("{} capture {} --steps 3 > {}/capture.txt 2>&1", STALLDX_BINARY, pid, dir).c_str());
  ASSERT_EQ(WEXITSTATUS(rc), 0) << stalldx::testing::read_file(dir + "/capture.txt");
  // The window closes when the fourth step after the request begins: its detach mark is the signal.
  std::string windows;
  for (int i = 0; i < 12000 && windows.find("detach") == std::string::npos; ++i) {
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().filename().string().rfind(kPartsFolderPrefix, 0) == 0) windows = stalldx::testing::read_file((e.path() / (pid + ".windows")).string());
    if (windows.find("detach") == std::string::npos) rec.wait_for_line("done", std::chrono::seconds(1));
  }
  ASSERT_NE(windows.find("detach"), std::string::npos) << rec.stderr_text();
  rec.signal(SIGINT);
  double after = 0;
  rec.wait_exit(after);
  Trace t;
  ASSERT_TRUE(read_trace_file(dir + "/t.json", t).is_ok()) << rec.stderr_text();
  EXPECT_EQ(t.meta.config[kSamplePlanKey], "on-demand");
  const auto w = device_windows(t.meta);
  ASSERT_TRUE(w);
  ASSERT_EQ(w->size(), 1u) << t.meta.config[kWindowsKey];
  int inside = 0;
  for (const HostRange& h : t.ranges)
    inside += h.role == Role::step && h.begin_ns >= w->front().begin_ns && h.end_ns <= w->front().end_ns;
  EXPECT_EQ(inside, 3);
  // A program that is not recorded in windows: a clear refusal.
  EXPECT_NE(WEXITSTATUS(std::system(fmt::format("{} capture {} > {}/no.txt 2>&1", STALLDX_BINARY, getpid(), dir).c_str())), 0);
  EXPECT_NE(stalldx::testing::read_file(dir + "/no.txt").find("is not recorded"), std::string::npos);
}
#endif

}  // namespace
}  // namespace stalldx::record
