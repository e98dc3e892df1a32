// Every command stops on SIGINT (exit 130) and SIGTERM (exit 143) within 2 s, at several moments, and
// leaves on disk what it says it does. Each test waits for the command's own progress line before it
// signals — never a fixed sleep — so it holds on a loaded 2-core machine.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fmt/format.h>

#include "spawned.h"
#include "stalldx/diagnose/sweep_analysis.h"
#include "stalldx/trace_io.h"
#include "test_dataset.h"

namespace stalldx::testing {
namespace {

namespace fs = std::filesystem;
constexpr double kMaxExitSeconds = 2.0;

struct Moment {
  const char* line;  // the progress line to wait for
  int sig;
};

TEST(Signals, RunStopsAtEveryMomentAndLeavesAnInterruptedTrace) {
  for (const Moment m : {Moment{"stalldx run: started", SIGINT}, Moment{"stalldx run: started", SIGTERM},
                         Moment{"warm-up done", SIGINT}, Moment{"warm-up done", SIGTERM}}) {
    const std::string trace = temp_dir("sig") + "/t.json";
    Spawned p({STALLDX_BINARY, "run", "--data", small_dataset(), "--device", "none", "--batch", "8", "--steps", "100000", "--warmup", "2",
               "--workers", "1", "--step-ms", "2", "--trace", trace});
    ASSERT_TRUE(p.wait_for_line(m.line)) << p.stderr_text();
    p.signal(m.sig);
    double secs = 0;
    EXPECT_EQ(p.wait_exit(secs), m.sig == SIGINT ? 130 : 143) << m.line << "\n" << p.stderr_text();
    EXPECT_LT(secs, kMaxExitSeconds) << m.line;
    Trace t;
    const Status st = read_trace_file(trace, t);
    ASSERT_TRUE(st.is_ok()) << st.message();
    EXPECT_TRUE(t.meta.interrupted);
    EXPECT_FALSE(fs::exists(trace + ".partial"));
  }
}

// Before: two runs on one trace path both exited 0, one trace silently replacing the other.
TEST(Signals, ASecondRunOnTheSameTracePathIsRefusedAndTheFirstStaysWhole) {
  const std::string dir = temp_dir("sig-two");
  const std::string trace = dir + "/t.json";
  const std::vector<std::string> args{STALLDX_BINARY, "run", "--data", small_dataset(), "--device", "none", "--batch", "8", "--steps", "100000",
                                      "--warmup", "1", "--workers", "1", "--step-ms", "2", "--trace", trace};
  Spawned first(args);
  ASSERT_TRUE(first.wait_for_line("stalldx run: started")) << first.stderr_text();
  Spawned second(args);
  double secs = 0;
  EXPECT_EQ(second.wait_exit(secs), 2) << second.stderr_text();
  EXPECT_NE(second.stderr_text().find("is writing " + trace), std::string::npos) << second.stderr_text();
  first.signal(SIGINT);
  EXPECT_EQ(first.wait_exit(secs), 130) << first.stderr_text();
  Trace t;
  ASSERT_TRUE(read_trace_file(trace, t).is_ok());
  EXPECT_TRUE(t.meta.interrupted);
  for (const auto& e : fs::directory_iterator(dir)) EXPECT_EQ(e.path().filename().string(), "t.json") << "no lock or partial file left";
}

TEST(Signals, RunWaitingOnAbsurdlySlowStorageStillStops) {
  const std::string trace = temp_dir("sig") + "/t.json";
  Spawned p({STALLDX_BINARY, "run", "--data", small_dataset(), "--device", "none", "--batch", "8", "--steps", "10", "--workers", "2",
             "--read-latency-ms", "10000", "--read-bandwidth-mbps", "0.1", "--trace", trace});
  ASSERT_TRUE(p.wait_for_line("stalldx run: started")) << p.stderr_text();
  p.signal(SIGTERM);
  double secs = 0;
  EXPECT_EQ(p.wait_exit(secs), 143) << p.stderr_text();
  EXPECT_LT(secs, kMaxExitSeconds);
  Trace t;
  ASSERT_TRUE(read_trace_file(trace, t).is_ok());
  EXPECT_TRUE(t.meta.interrupted);
}

TEST(Signals, DatasetStopsLeavesItMarkedIncompleteAndResumes) {
  const std::string root = temp_dir("sigds") + "/d";
  {
    // One thread: long enough (seconds) that the signal lands mid-generation, short enough under ASan.
    Spawned p({STALLDX_BINARY, "dataset", root, "--classes", "4", "--per-class", "100", "--threads", "1"});
    ASSERT_TRUE(p.wait_for_line("stalldx dataset: writing")) << p.stderr_text();
    p.signal(SIGINT);
    double secs = 0;
    ASSERT_EQ(p.wait_exit(secs), 130) << p.stderr_text();
    EXPECT_LT(secs, kMaxExitSeconds);
  }
  EXPECT_TRUE(fs::exists(root + "/.stalldx-incomplete"));
  EXPECT_FALSE(fs::exists(root + "/manifest.tsv"));
  for (const auto& e : fs::recursive_directory_iterator(root)) EXPECT_EQ(e.path().filename().string().find(".partial"), std::string::npos) << e.path();
  {  // an incomplete dataset is never used
    Spawned run({STALLDX_BINARY, "run", "--data", root, "--device", "none", "--steps", "1"});
    double secs = 0;
    EXPECT_EQ(run.wait_exit(secs), 2);
    EXPECT_NE(run.stderr_text().find("incomplete"), std::string::npos) << run.stderr_text();
  }
  {  // other options than the interrupted generation: refused
    Spawned other({STALLDX_BINARY, "dataset", root, "--classes", "4", "--per-class", "101", "--resume"});
    double secs = 0;
    EXPECT_EQ(other.wait_exit(secs), 2) << other.stderr_text();
  }
  Spawned resume({STALLDX_BINARY, "dataset", root, "--classes", "4", "--per-class", "100", "--resume"});
  double secs = 0;
  ASSERT_EQ(resume.wait_exit(secs, std::chrono::seconds(900)), 0) << resume.stderr_text();  // generous: sanitizer builds are slow
  EXPECT_FALSE(fs::exists(root + "/.stalldx-incomplete"));
  EXPECT_NE(read_file(root + "/manifest.tsv").find("class_003/img_000399.jpg"), std::string::npos);
}

TEST(Signals, DiagnoseStopsWhileReadingATrace) {
  const std::string dir = temp_dir("sigdiag");
  const std::string fifo = dir + "/trace.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  Spawned p({STALLDX_BINARY, "diagnose", fifo});
  ASSERT_TRUE(p.wait_for_line("stalldx diagnose: reading")) << p.stderr_text();
  const int fd = open(fifo.c_str(), O_WRONLY);  // waits for the reader to open its end
  ASSERT_GE(fd, 0);
  // 1 MB through a 64 KB pipe: when write returns, the reader is inside its read — the readiness signal.
  const std::string chunk = "{\"traceEvents\": [" + std::string(1 << 20, ' ');
  ASSERT_EQ(write(fd, chunk.data(), chunk.size()), static_cast<ssize_t>(chunk.size()));
  p.signal(SIGINT);
  double secs = 0;
  EXPECT_EQ(p.wait_exit(secs), 130) << p.stderr_text();
  EXPECT_LT(secs, kMaxExitSeconds);
  close(fd);
}

TEST(Signals, SweepStopsBetweenPointsKeepsThemAndResumes) {
  const std::string out = temp_dir("sigsweep");
  const std::vector<std::string> args{STALLDX_BINARY, "sweep",     "--data",   small_dataset(), "--device", "none", "--batch", "8",
                                      "--steps",      "3",         "--warmup", "1",             "--step-ms", "20",  "--repeat", "1",
                                      "--workers",    "1,2,3,4",   "--prefetch", "1",           "--out",    out};
  {
    Spawned p(args);
    ASSERT_TRUE(p.wait_for_line("1/4 points done")) << p.stderr_text();
    p.signal(SIGTERM);
    double secs = 0;
    EXPECT_EQ(p.wait_exit(secs), 143) << p.stderr_text();
    EXPECT_LT(secs, kMaxExitSeconds);
  }
  int skipped = 0;
  const auto kept = diagnose::parse_sweep_csv(read_file(out + "/sweep.csv"), skipped);
  EXPECT_GE(kept.size(), 1u);
  EXPECT_LT(kept.size(), 4u);
  EXPECT_EQ(skipped, 0);
  std::vector<std::string> again = args;
  again.push_back("--resume");
  Spawned r(again);
  double secs = 0;
  ASSERT_EQ(r.wait_exit(secs), 0) << r.stderr_text();
  EXPECT_EQ(diagnose::parse_sweep_csv(read_file(out + "/sweep.csv"), skipped).size(), 4u);
}

TEST(Signals, TuneStopsBetweenItsRuns) {
  Spawned p({STALLDX_BINARY, "tune", "--data", small_dataset(), "--device", "none", "--batch", "8", "--steps", "3", "--warmup", "1",
             "--step-ms", "20", "--repeat", "2", "--workers", "1,2,3,4", "--prefetch", "1,2"});
  ASSERT_TRUE(p.wait_for_line("profiled")) << p.stderr_text();
  p.signal(SIGTERM);
  double secs = 0;
  EXPECT_EQ(p.wait_exit(secs), 143) << p.stderr_text();
  EXPECT_LT(secs, kMaxExitSeconds);
}

TEST(Signals, EvalForwardsTheSignalToItsRunAndStops) {
  const std::string dir = temp_dir("sigeval");
  write_file(dir + "/slow.toml", "[run]\ndevice = \"none\"\nbatch = 8\nwarmup = 1\nsteps = 1000\nworkers = 1\nstep-ms = 50\n");
  write_file(dir + "/list.tsv", "slow\t" + dir + "/slow.toml\tdevice-bound\n");
  // A previous complete evaluation in --out: an interrupted one must leave it whole (before: wiped).
  fs::create_directories(dir + "/out");
  write_file(dir + "/out/confusion.txt", "previous\n");
  write_file(dir + "/out/slow.json", "previous trace\n");
  Spawned p({STALLDX_BINARY, "eval", dir + "/list.tsv", "--data", small_dataset(), "--out", dir + "/out"});
  ASSERT_TRUE(p.wait_for_line("stalldx eval: slow ...")) << p.stderr_text();
  p.signal(SIGINT);
  double secs = 0;
  EXPECT_EQ(p.wait_exit(secs), 130) << p.stderr_text();
  EXPECT_LT(secs, kMaxExitSeconds);
  EXPECT_EQ(read_file(dir + "/out/confusion.txt"), "previous\n");
  EXPECT_EQ(read_file(dir + "/out/slow.json"), "previous trace\n");
  for (const auto& e : fs::directory_iterator(dir + "/out")) EXPECT_NE(e.path().filename().string().rfind(".stalldx-eval", 0), 0u) << e.path();
}

}  // namespace
}  // namespace stalldx::testing
