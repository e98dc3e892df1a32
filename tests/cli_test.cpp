// The stalldx executable end to end: exit codes, configs, JSON, and a SIGINT that leaves a loadable trace.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <thread>

#include "stalldx/trace_io.h"
#include "test_dataset.h"

namespace {

using stalldx::testing::read_file;
using stalldx::testing::small_dataset;
using stalldx::testing::temp_dir;

struct Result {
  int code;
  std::string out;
};

Result run(const std::string& args) {
  const std::string out = temp_dir("cli") + "/out.txt";
  const std::string cmd = fmt::format("{} {} > {} 2>&1", STALLDX_BINARY, args, out);
  const int rc = std::system(cmd.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, read_file(out)};
}

const std::string kFast = "--device none --batch 8 --warmup 1 --steps 3 --workers 2 --step-ms 1";

TEST(Cli, RunPrintsTheReportAndAVerdict) {
  const std::string trace = temp_dir("cli") + "/t.json";
  const Result r = run(fmt::format("run --data {} {} --trace {}", small_dataset(), kFast, trace));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("img/s"), std::string::npos);
  EXPECT_NE(r.out.find("HOST STAND-IN"), std::string::npos);
  EXPECT_NE(r.out.find("stalldx diagnosis"), std::string::npos);
  stalldx::Trace t;
  EXPECT_TRUE(stalldx::read_trace_file(trace, t).is_ok());
  const Result d = run("diagnose " + trace);
  EXPECT_EQ(d.code, 0) << d.out;
  EXPECT_NE(d.out.find("steady state: 3 steps (1 warm-up reported apart)"), std::string::npos) << d.out;
}

TEST(Cli, JsonOutputParses) {
  const Result r = run(fmt::format("run --data {} {} --json --no-profile", small_dataset(), kFast));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(j.at("images"), 24);
  EXPECT_EQ(j.at("config").at("profile"), false);
}

TEST(Cli, ConfigFileIsReadByCli11) {
  const std::string dir = temp_dir("cfg");
  stalldx::testing::write_file(dir + "/c.toml", fmt::format("[run]\ndata = \"{}\"\ndevice = \"none\"\nbatch = 4\nsteps = 2\nwarmup = 0\n"
                                                            "workers = 1\nstep-ms = 0\n", small_dataset()));
  const Result r = run(fmt::format("run --config {}/c.toml --json --no-profile", dir));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(j.at("config").at("batch"), 4);
  EXPECT_EQ(j.at("images"), 8);
}

TEST(Cli, BadInputsExitTwoWithAMessage) {
  const std::string dir = temp_dir("bad");
  stalldx::testing::write_file(dir + "/bad.toml", "[run]\nworkers = \"many\"\n");
  std::vector<std::string> cases = {"run --workers 0 --device none", "run --batch -1 --device none",
                                  "run --data /nonexistent --device none", "run --prefetch 0", "run --device quantum",
                                  fmt::format("run --data {} --batch 100000 --device none", small_dataset()),
                                  fmt::format("run --data {} --device none --trace /nonexistent-dir/t.json", small_dataset()),
                                  fmt::format("run --config {}/bad.toml", dir), "run --config /nonexistent.toml",
                                  "diagnose /nonexistent-trace.json",
                                  fmt::format("diagnose {}/bad_traces/truncated.json", STALLDX_TEST_DATA)};
  for (const char* bad : {"wrong_type", "zero_workers", "negative_batch", "malformed", "unknown_key", "bad_enum"})
    cases.push_back(fmt::format("run --config {}/bad_configs/{}.toml", STALLDX_TEST_DATA, bad));  // flags would win over the file
  for (const std::string& args : cases) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_FALSE(r.out.empty()) << args;
  }
}

TEST(Cli, SigintLeavesALoadableInterruptedTrace) {
  const std::string trace = temp_dir("sig") + "/t.json";
  const std::string out = temp_dir("sig") + "/out.txt";
  const std::string data = small_dataset();  // made here, before the fork: the child only execs
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    freopen(out.c_str(), "w", stdout);
    execl(STALLDX_BINARY, "stalldx", "run", "--data", data.c_str(), "--device", "none", "--batch", "8", "--steps", "100000",
          "--warmup", "1", "--workers", "1", "--step-ms", "2", "--trace", trace.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  stalldx::Trace t;
  const stalldx::Status st = stalldx::read_trace_file(trace, t);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_TRUE(t.meta.interrupted);
  EXPECT_GT(t.meta.steps_completed, 0);
  EXPECT_NE(read_file(out).find("INTERRUPTED"), std::string::npos);
}

TEST(Cli, DatasetCommandWritesAManifest) {
  const std::string dir = temp_dir("ds") + "/d";
  const Result r = run(fmt::format("dataset {} --classes 2 --per-class 3", dir));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(read_file(dir + "/manifest.tsv").find("class_001/img_000005.jpg"), std::string::npos);
  EXPECT_EQ(run(fmt::format("dataset {} --classes 0", dir)).code, 2);
}

}  // namespace
