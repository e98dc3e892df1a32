// `record --sample`: the plan and the window scheduler (pure), the windows a program marks live with no
// device (NVTX steps only), the live lines and on-demand capture (the diagnosis of sampled traces:
// sampled_diagnosis_test.cpp).
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
