// The procedures behind sweep and eval, called as libraries: resume refuses incomparable options,
// paths with quotes and spaces work, children are spawned without a shell and stopped on request.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "stalldx/datasets/generator.h"
#include "stalldx/record/part_format.h"
#include "stalldx/record/sampling.h"
#include "stalldx/tasks/capture.h"
#include "stalldx/tasks/child_process.h"
#include "stalldx/tasks/eval.h"
#include "stalldx/tasks/sweep.h"
#include "stalldx/tasks/tune.h"
#include "test_dataset.h"

namespace stalldx::tasks {
namespace {

using stalldx::testing::read_file;
using stalldx::testing::small_dataset;
using stalldx::testing::temp_dir;
using stalldx::testing::write_file;

SweepOptions tiny_sweep(const std::string& out) {
  SweepOptions o;
  o.base.data = small_dataset();
  o.base.device = DeviceKind::none;
  o.base.batch = 8;
  o.base.steps = 2;
  o.base.warmup = 1;
  o.base.step_ms = 1;
  o.workers = {1};
  o.prefetch = {1};
  o.repeat = 1;
  o.out = out;
  return o;
}

TEST(SweepTask, ResumeRefusesEveryIncomparableOption) {
  const std::string out = temp_dir("sweep") + "/it's a folder";
  SweepOptions o = tiny_sweep(out);
  SweepResult r;
  ASSERT_TRUE(run_sweep(o, r).is_ok());
  ASSERT_EQ(r.points.size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(out + "/sweep.svg"));
  o.resume = true;
  // The options the issue found silently mixed, each alone.
  std::vector<std::function<void(RunConfig&)>> changes = {
      [](RunConfig& c) { c.transform = TransformKind::eval; },  [](RunConfig& c) { c.seed = 9; },
      [](RunConfig& c) { c.pin_per_batch = true; },             [](RunConfig& c) { c.sync_every_step = true; },
      [](RunConfig& c) { c.step_kernels = 7; },                 [](RunConfig& c) { c.dct_scaling = false; },
      [](RunConfig& c) { c.roi_decode = false; },               [](RunConfig& c) { c.on_bad_sample = BadSamplePolicy::fail; }};
  for (std::size_t i = 0; i < changes.size(); ++i) {
    SweepOptions other = o;
    changes[i](other.base);
    SweepResult rr;
    const Status st = run_sweep(other, rr);
    EXPECT_EQ(st.code(), Status::Code::invalid_argument) << "change #" << i << " was accepted by --resume";
  }
  SweepResult same;
  ASSERT_TRUE(run_sweep(o, same).is_ok());
  EXPECT_EQ(same.resumed, 1u);
}

TEST(SweepTask, StopBeforeTheFirstPointKeepsAnEmptyButValidCsv) {
  const std::string out = temp_dir("sweep");
  StopFlag stop;
  stop.raise(SIGTERM);
  SweepResult r;
  ASSERT_TRUE(run_sweep(tiny_sweep(out), r, &stop).is_ok());
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(stop.exit_code(), 143);
  EXPECT_NE(read_file(out + "/sweep.csv").find("workers"), std::string::npos);
}

TEST(EvalTask, PathsWithQuotesAndSpacesReachTheChildIntact) {
  const std::string dir = temp_dir("eval") + "/a 'quoted' dir";
  std::filesystem::create_directories(dir);
  const std::string config = dir + "/con\"sumer bound.toml";
  write_file(config, "[run]\ndevice = \"none\"\nbatch = 8\nwarmup = 1\nsteps = 3\nworkers = 2\nstep-ms = 20\n");
  write_file(dir + "/list.tsv", "consumer\t" + config + "\tdevice-bound\n");
  EvalOptions o;
  o.scenarios = dir + "/list.tsv";
  o.stalldx = STALLDX_BINARY;
  o.out = dir + "/out put";
  o.data = small_dataset();
  o.min_accuracy = 0;
  o.sampled_view = record::SamplePlan{0, 1, 2};
  EvalResult r;
  const Status st = run_eval(o, r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(r.scores.size(), 1u) << (r.failures.empty() ? "" : r.failures[0]);
  EXPECT_TRUE(r.failures.empty());
  EXPECT_TRUE(std::filesystem::exists(o.out + "/consumer.json"));
  ASSERT_EQ(r.view_agreements.size(), 1u) << "the trace also seen sampled 1/2";
  EXPECT_GT(r.view_agreements[0].steps, 0);
  EXPECT_NE(read_file(o.out + "/agreement-sampled-view.txt").find("consumer"), std::string::npos);
  EXPECT_NE(read_file(o.out + "/confusion.txt").find("consumer"), std::string::npos);
  o.only = "nope";
  EXPECT_EQ(run_eval(o, r).code(), Status::Code::invalid_argument);
}

// Before: a scenario named "../../x" wrote its trace and log outside --out.
TEST(EvalTask, ScenarioNamesThatAreNotPlainFileNamesAreRefusedWithTheLine) {
  const std::string dir = temp_dir("eval-names");
  write_file(dir + "/c.toml", "[run]\ndevice = \"none\"\n");
  for (const std::string& name : std::vector<std::string>{"../../escaped", "/abs/path", "a/b", ".hidden", "tab\x1b[31m", std::string(101, 'a')}) {
    write_file(dir + "/list.tsv", "# header\n" + name + "\t" + dir + "/c.toml\tdevice-bound\n");
    std::vector<Scenario> s;
    const Status st = load_scenarios(dir + "/list.tsv", s);
    EXPECT_EQ(st.code(), Status::Code::invalid_argument) << name;
    EXPECT_NE(st.message().find("list.tsv:2"), std::string::npos) << st.message();
  }
  write_file(dir + "/list.tsv", "fine_name-1.2\t" + dir + "/c.toml\tdevice-bound\n");
  std::vector<Scenario> s;
  EXPECT_TRUE(load_scenarios(dir + "/list.tsv", s).is_ok());
}

// A list run from another folder finds the configs it names as from its repository's root (the lists
// in configs/ name configs/scenarios-cpu/x.toml). Before: "config ... does not exist" outside the root.
TEST(EvalTask, ConfigsAreFoundFromTheListsFolderUp) {
  const std::string dir = temp_dir("eval-up");
  std::filesystem::create_directories(dir + "/configs/set");
  write_file(dir + "/configs/set/c.toml", "[run]\ndevice = \"none\"\n");
  write_file(dir + "/configs/list.tsv", "one\tconfigs/set/c.toml\tdevice-bound\ntwo\tset/c.toml\tdevice-bound\n");
  std::vector<Scenario> s;
  ASSERT_FALSE(std::filesystem::exists("configs/set/c.toml")) << "the test runs elsewhere";
  const Status st = load_scenarios(dir + "/configs/list.tsv", s);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(s.size(), 2u);
  for (const Scenario& sc : s) EXPECT_TRUE(std::filesystem::equivalent(sc.config, dir + "/configs/set/c.toml")) << sc.config;
  write_file(dir + "/configs/list.tsv", "one\tconfigs/set/missing.toml\tdevice-bound\n");
  EXPECT_NE(load_scenarios(dir + "/configs/list.tsv", s).message().find("list.tsv:1: config 'configs/set/missing.toml' does not exist"),
            std::string::npos);
}

// Writers on a full disk (a small tmpfs; CI runs as root): the failure is an error with a message, never
// "results: ..." over empty files, and a dataset is left marked incomplete.
class FullDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir("full");
    if (mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=96k") != 0) GTEST_SKIP() << "cannot mount a tmpfs (needs root): " << std::strerror(errno);
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) umount(dir_.c_str());
  }
  std::string dir_;
  bool mounted_ = false;
};

TEST_F(FullDisk, SweepFailsLoudly) {
  write_file(dir_ + "/filler", std::string(90 * 1024, 'x'));
  SweepResult r;
  const Status st = run_sweep(tiny_sweep(dir_ + "/out"), r);
  EXPECT_EQ(st.code(), Status::Code::io_error) << st.message();
}

TEST_F(FullDisk, DatasetFailsAndStaysMarkedIncomplete) {
  datasets::GeneratorOptions o;
  o.root = dir_ + "/ds";
  o.classes = 2;
  o.images_per_class = 40;  // ~1.5 MB: cannot fit
  datasets::GeneratorReport rep;
  const Status st = datasets::generate_dataset(o, rep);
  EXPECT_EQ(st.code(), Status::Code::io_error) << st.message();
  EXPECT_TRUE(std::filesystem::exists(o.root + "/.stalldx-incomplete"));
  EXPECT_FALSE(std::filesystem::exists(o.root + "/manifest.tsv"));
}

// `capture PID` writes where PID's environment says (STALLDX_RECORD_DIR): only into a parts folder of a
// record. Before, any folder a process named got a file 'capture' renamed over whatever was there.
TEST(CaptureTask, OnlyARecordsPartsFolderGetsTheRequest) {
  const std::string dir = temp_dir("capture");
  const std::string plain = dir + "/plain";
  std::filesystem::create_directories(plain);
  write_file(plain + "/capture", "theirs");
  const pid_t child = fork();
  if (child == 0) {
    ::setenv(record::kRecordDirEnv, plain.c_str(), 1);
    ::setenv(record::kSampleEnv, "on-demand", 1);
    execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(child, 0);
  // Ready once its environment (after exec) names the folder.
  for (int i = 0; i < 5000; ++i) {
    std::ifstream in(fmt::format("/proc/{}/environ", child), std::ios::binary);
    const std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (env.find(plain) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CaptureRequest r;
  const Status st = request_capture(child, 3, r);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("is not a stalldx parts folder"), std::string::npos) << st.message();
  EXPECT_EQ(read_file(plain + "/capture"), "theirs");
}

TEST(ChildProcess, ExitCodesPassAndAStopSignalsTheChild) {
  const std::string dir = temp_dir("child");
  ChildResult r;
  ASSERT_TRUE(run_child({"/bin/sh", "-c", "echo hi; exit 3"}, dir + "/log", r).is_ok());
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(read_file(dir + "/log"), "hi\n");
  EXPECT_FALSE(run_child({dir + "/no such program"}, dir + "/log", r).is_ok());
  StopFlag stop;
  stop.raise(SIGTERM);  // already raised: the first poll signals the child, no timing involved
  ASSERT_TRUE(run_child({"/bin/sleep", "60"}, dir + "/log", r, &stop).is_ok());
  EXPECT_TRUE(r.stopped);
  EXPECT_FALSE(r.exited);
  EXPECT_EQ(r.signal, SIGTERM);
}

}  // namespace
}  // namespace stalldx::tasks

namespace stalldx::tasks {
namespace {

// Tune's procedure (not its speed): one profile, then measured points only from the lists, each with a
// reason; the answer is a measured point within the tolerance of the best measured, in far fewer runs
// than the grid.
TEST(TuneTask, ClimbsFromThePredictedKneeAndAnswersWithAMeasuredPoint) {
  TuneOptions o;
  o.base = tiny_sweep(temp_dir("tune")).base;
  o.base.steps = 4;
  o.base.workers = 2;
  o.workers = {1, 2, 3, 4};
  o.prefetch = {1, 2};
  o.repeat = 1;
  TuneResult r;
  const Status st = run_tune(o, r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_FALSE(r.runs.empty());
  EXPECT_TRUE(r.runs.front().profiled);
  EXPECT_TRUE(r.costs.valid) << (r.costs.limits.empty() ? "" : r.costs.limits[0]);
  EXPECT_EQ(r.predicted.size(), 4u);
  bool chosen_measured = false;
  for (const TuneRun& run : r.runs) {
    EXPECT_FALSE(run.why.empty());
    if (!run.profiled) {
      EXPECT_NE(std::find(o.workers.begin(), o.workers.end(), run.workers), o.workers.end());
      chosen_measured |= run.workers == r.workers && run.prefetch == r.prefetch;
    }
  }
  EXPECT_TRUE(chosen_measured);
  EXPECT_GE(r.images_per_second, (1 - o.tolerance) * r.best_images_per_second);
  EXPECT_LT(r.pipeline_runs, 4 * 2 * (o.repeat + 1));  // the grid a sweep would run
  EXPECT_NE(tune_text(r).find("result:"), std::string::npos);
}

}  // namespace
}  // namespace stalldx::tasks
