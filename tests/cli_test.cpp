// The stalldx executable end to end: exit codes, configs, JSON, and a SIGINT that leaves a loadable trace.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <filesystem>
#include <thread>

#include "stalldx/trace_io.h"
#include "test_dataset.h"

namespace {

using stalldx::testing::read_file;
using stalldx::testing::small_dataset;
using stalldx::testing::temp_dir;
using stalldx::testing::write_file;
namespace fs = std::filesystem;

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
                                  "diagnose /nonexistent-trace.json", "run --collective quantum",
                                  fmt::format("run --data {} --device none --collective nccl", small_dataset()),
                                  fmt::format("diagnose {}/bad_traces/truncated.json", STALLDX_TEST_DATA),
                                  "diagnose -- ls", "record --trace x.json"};  // a command after -- is record's alone; record needs one
  for (const char* bad : {"wrong_type", "zero_workers", "negative_batch", "malformed", "unknown_key", "bad_enum", "duplicate_table",
                          "duplicate_key", "misspelled_key", "nan_value"})
    cases.push_back(fmt::format("run --config {}/bad_configs/{}.toml", STALLDX_TEST_DATA, bad));  // flags would win over the file
  for (const std::string& args : cases) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_FALSE(r.out.empty()) << args;
  }
}

TEST(Cli, ConfigErrorsNameTheFileTheLineTheKeyAndTheNearestValidKeys) {
  const std::string file = fmt::format("{}/bad_configs/misspelled_key.toml", STALLDX_TEST_DATA);
  const Result r = run("run --config " + file);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find(file + ":2: unknown key 'read-latency-msec' in [run]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("read-latency-ms"), std::string::npos) << r.out;
  // A value of the wrong type names the file and its line too, not only the option.
  for (const char* bad : {"wrong_type", "nan_value", "zero_workers"}) {
    const std::string f = fmt::format("{}/bad_configs/{}.toml", STALLDX_TEST_DATA, bad);
    const Result w = run("run --config " + f);
    EXPECT_EQ(w.code, 2) << w.out;
    EXPECT_NE(w.out.find(f + ":"), std::string::npos) << w.out;
  }
  const Result d = run(fmt::format("run --config {}/bad_configs/duplicate_table.toml", STALLDX_TEST_DATA));
  EXPECT_NE(d.out.find(":4: table [run] appears twice"), std::string::npos) << d.out;
}

TEST(Cli, TracePathsThatAreNotOursAreRefusedAndReplacementIsSaid) {
  const std::string dir = temp_dir("trace");
  const std::string data = dir + "/data";
  fs::create_directories(data + "/a");
  fs::copy(small_dataset() + "/class_000", data + "/a");
  write_file(data + "/manifest.tsv.keep", "x");
  for (const std::string& target : {std::string("/dev/null"), data + "/a/out.json", dir}) {
    const Result r = run(fmt::format("run --data {} {} --trace {}", data, kFast, target));
    EXPECT_EQ(r.code, 2) << target << "\n" << r.out;
  }
  struct stat st {};
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  write_file(dir + "/old.json", "old");
  const Result r = run(fmt::format("run --data {} {} --trace {}/old.json", data, kFast, dir));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("replaced the file that was there"), std::string::npos) << r.out;
  const Result np = run(fmt::format("run --data {} {} --trace {}/x.json --no-profile", data, kFast, dir));
  EXPECT_EQ(np.code, 2);
  EXPECT_NE(np.out.find("--no-profile"), std::string::npos) << np.out;
}

// Standard output that cannot be written (a full disk) is an error for every command, never exit 0.
TEST(Cli, FullStdoutIsAnErrorForEveryCommand) {
  const std::string dir = temp_dir("full");
  const std::string trace = dir + "/t.json";
  ASSERT_EQ(run(fmt::format("run --data {} {} --trace {}", small_dataset(), kFast, trace)).code, 0);
  write_file(dir + "/list.tsv", "c\t" + dir + "/c.toml\tdevice-bound\n");
  write_file(dir + "/c.toml", "[run]\ndevice = \"none\"\nbatch = 8\nwarmup = 1\nsteps = 2\nworkers = 1\nstep-ms = 1\n");
  const std::vector<std::string> commands = {
      fmt::format("run --data {} {}", small_dataset(), kFast),
      fmt::format("run --data {} {} --json --no-profile", small_dataset(), kFast),
      "diagnose " + trace,
      "diagnose --json " + trace,
      fmt::format("sweep --data {} --device none --batch 8 --steps 2 --warmup 1 --step-ms 1 --repeat 1 --workers 1 --prefetch 1 --out {}/sw",
                  small_dataset(), dir),
      fmt::format("eval {}/list.tsv --data {} --out {}/ev --min-accuracy 0", dir, small_dataset(), dir),
      fmt::format("dataset {}/ds --classes 1 --per-class 2", dir)};
  for (const std::string& args : commands) {
    const std::string cmd = fmt::format("{} {} > /dev/full 2> {}/err.txt", STALLDX_BINARY, args, dir);
    const int rc = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) != 0) << args;
    EXPECT_NE(read_file(dir + "/err.txt").find("standard output"), std::string::npos) << args << ": " << read_file(dir + "/err.txt");
  }
}

// `stalldx run ... 2>&1 | head -c 1`: the reader leaves after one byte; the progress lines, the report
// and its error message then meet a closed pipe. The run must end with an exit code (the trace still
// written), never a signal — fmt::print on a closed stderr used to throw and abort.
TEST(Cli, AReaderThatLeavesEarlyIsAnExitCodeNotACrash) {
  const std::string dir = temp_dir("closed");
  const std::string trace = dir + "/t.json";
  const std::string cmd = fmt::format("bash -c '{} run --data {} --device none --batch 8 --warmup 1 --steps 4 --workers 1 --step-ms 20 "
                                      "--trace {} 2>&1 | head -c 1 > /dev/null; exit ${{PIPESTATUS[0]}}'",
                                      STALLDX_BINARY, small_dataset(), trace);
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_LT(WEXITSTATUS(rc), 128) << "killed by signal " << WEXITSTATUS(rc) - 128;
  EXPECT_TRUE(std::filesystem::exists(trace));
}

TEST(Cli, DatasetCommandWritesAManifest) {
  const std::string dir = temp_dir("ds") + "/d";
  const Result r = run(fmt::format("dataset {} --classes 2 --per-class 3", dir));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(read_file(dir + "/manifest.tsv").find("class_001/img_000005.jpg"), std::string::npos);
  EXPECT_EQ(run(fmt::format("dataset {} --classes 0", dir)).code, 2);
}

// Before: a second `dataset DIR` silently replaced the manifest and same-named files of whatever was there.
TEST(Cli, DatasetRefusesAFolderThatIsNotAnUnfinishedGenerationOfTheSameOptions) {
  const std::string dir = temp_dir("ds-over");
  write_file(dir + "/notes.txt", "mine\n");
  write_file(dir + "/manifest.tsv", "mine\n");
  const Result r = run(fmt::format("dataset {} --classes 2 --per-class 3", dir));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--force"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(dir + "/manifest.tsv"), "mine\n");
  EXPECT_FALSE(fs::exists(dir + "/class_000"));
  const std::string made = temp_dir("ds-again") + "/d";  // a finished dataset is not taken up again either
  ASSERT_EQ(run(fmt::format("dataset {} --classes 2 --per-class 3", made)).code, 0);
  EXPECT_EQ(run(fmt::format("dataset {} --classes 2 --per-class 3", made)).code, 2);
  const Result forced = run(fmt::format("dataset {} --classes 2 --per-class 3 --force", dir));
  ASSERT_EQ(forced.code, 0) << forced.out;
  EXPECT_NE(read_file(dir + "/manifest.tsv").find("class_001/img_000005.jpg"), std::string::npos);
  EXPECT_EQ(read_file(dir + "/notes.txt"), "mine\n");
}

}  // namespace

// `diagnose --trimmed DIR`: a cut of the trace that diagnoses alike, written beside, never over its input.
TEST(Cli, DiagnoseWritesATrimmedCopyAndNeverOverItsInput) {
  const std::string dir = temp_dir("trim");
  const std::string trace = dir + "/t.json";
  const Result r = run(fmt::format("run --data {} --device none --batch 8 --warmup 1 --steps 8 --workers 2 --step-ms 1 --trace {}",
                                   small_dataset(), trace));
  ASSERT_EQ(r.code, 0) << r.out;
  fs::create_directories(dir + "/cut");
  const Result d = run(fmt::format("diagnose {} --trimmed {}/cut --keep-steps 3", trace, dir));
  ASSERT_EQ(d.code, 0) << d.out;
  const Result again = run(fmt::format("diagnose {}/cut/t.json", dir));
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_NE(again.out.find("steady state: 3 steps"), std::string::npos) << again.out;
  const std::string before = read_file(trace);
  for (const std::string& target : {dir, dir + "/missing", trace}) {
    const Result bad = run(fmt::format("diagnose {} --trimmed {}", trace, target));
    EXPECT_EQ(bad.code, 2) << target << "\n" << bad.out;
    EXPECT_NE(bad.out.find("--trimmed"), std::string::npos) << bad.out;
  }
  EXPECT_EQ(read_file(trace), before) << "the input is untouched";
}

// An output named as another of the command's files — an input it reads, or a second output — is
// refused before anything runs. Before: `diagnose t.json --html t.json` wrote the report over the trace,
// `run --config c.toml --trace c.toml` the trace over the config, `record --trace t --live-json t` mixed
// both (found 2026-12-06, here).
TEST(Cli, AnOutputIsNeverAnotherOfTheCommandsFiles) {
  const std::string dir = temp_dir("distinct");
  const std::string trace = dir + "/t.json", config = dir + "/c.toml";
  ASSERT_EQ(run(fmt::format("run --data {} {} --trace {}", small_dataset(), kFast, trace)).code, 0);
  write_file(config, "[run]\nsteps = 2\n");
  write_file(dir + "/roles.toml", "[[role]]\nmatch = \"slurp\"\nrole = \"retrieval\"\n");
  fs::create_symlink(trace, dir + "/link.json");
  const std::string t = read_file(trace), c = read_file(config);
  for (const std::string& args : {fmt::format("diagnose {} --html {}", trace, trace), fmt::format("diagnose {} --svg {}/link.json", trace, dir),
                                  fmt::format("diagnose {} --svg {}/x.svg --html {}/./x.svg", trace, dir, dir),
                                  fmt::format("run --config {} --data {} {} --trace {}", config, small_dataset(), kFast, config),
                                  fmt::format("run --config={} --data {} {} --html {}", config, small_dataset(), kFast, config),
                                  fmt::format("run --data {} {} --trace {}/y.json --html {}/y.json", small_dataset(), kFast, dir, dir),
                                  fmt::format("record --trace {}/z.json --live-json {}/z.json -- true", dir, dir),
                                  fmt::format("record --trace {}/roles.toml --roles {}/roles.toml -- true", dir, dir)}) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("are the same file"), std::string::npos) << args << "\n" << r.out;
  }
  EXPECT_EQ(run(fmt::format("diagnose {} {}/link.json", trace, dir)).out.find("are the same file"), std::string::npos)
      << "two inputs may be one file (nothing is written over)";
  EXPECT_EQ(read_file(trace), t);
  EXPECT_EQ(read_file(config), c);
  EXPECT_NE(read_file(dir + "/roles.toml").find("slurp"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir + "/x.svg") || fs::exists(dir + "/y.json") || fs::exists(dir + "/z.json"));
}
