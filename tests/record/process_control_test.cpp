// stalldx record and the program it runs: the terminal is the program's, a suspended program is
// reported and still ends on Ctrl-C, a second Ctrl-C ends one that ignores the first (SIGTERM, then
// SIGKILL), a full disk never kills the program (its status is passed on, the recording's failure said
// apart), a folder left behind merges later, a process outliving the command is named, and ranks of an
// MPI launch write one trace each. Every wait is on a line the programs print — no fixed sleep.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <regex>
#include <set>

#include "spawned.h"
#include "stalldx/rank_paths.h"
#include "stalldx/record/merge.h"
#include "stalldx/record/sampling.h"
#include "stalldx/trace_io.h"
#include "test_support.h"

namespace stalldx::record {
namespace {

namespace fs = std::filesystem;
using stalldx::testing::Spawned;

#ifdef NVTX_LOOP
constexpr auto kExit = std::chrono::seconds(60);

struct Ran {
  int rc = -1;
  std::string log;  // stderr (stalldx's notes and the summary)
};
Ran run_command(const std::vector<std::string>& argv) {
  Spawned p(argv);
  double secs = 0;
  Ran r;
  r.rc = p.wait_exit(secs, std::chrono::seconds(300));
  r.log = p.stderr_text();
  return r;
}

// Before: CMD was put in a background process group, stopped by SIGTTIN at its first read, and record
// waited for ever.
TEST(RecordProcessControl, TheCommandReadsTheTerminal) {
  const std::string dir = stalldx::testing::temp_dir("rec-tty");
  Spawned p(Spawned::WithTerminal{}, {STALLDX_BINARY, "record", "--trace", dir + "/t.json", "--", "/bin/sh", "-c",
                                      "read line; echo \"got $line\" >&2; exit 7"});
  if (!p.has_terminal()) GTEST_SKIP() << "no pseudo-terminal here";
  p.type("hello\n");  // buffered by the terminal until the command reads it
  double secs = 0;
  EXPECT_EQ(p.wait_exit(secs, kExit), 7) << p.stderr_text();
  EXPECT_NE(p.stderr_text().find("got hello"), std::string::npos) << p.stderr_text();
}

// Before: the second Ctrl-C did nothing and a command that ignores SIGINT and SIGTERM ran for ever.
TEST(RecordProcessControl, ASecondCtrlCAtTheTerminalEndsACommandThatIgnoresSignals) {
  const std::string dir = stalldx::testing::temp_dir("rec-tty2");
  Spawned p(Spawned::WithTerminal{}, {STALLDX_BINARY, "record", "--kill-after", "1", "--trace", dir + "/t.json", "--", "/bin/sh", "-c",
                                      "trap '' INT TERM; echo ready >&2; while :; do sleep 1; done"});
  if (!p.has_terminal()) GTEST_SKIP() << "no pseudo-terminal here";
  ASSERT_TRUE(p.wait_for_line("ready")) << p.stderr_text();
  p.type("\x03");
  ASSERT_TRUE(p.wait_for_line("interrupt again")) << p.stderr_text();
  p.type("\x03");
  ASSERT_TRUE(p.wait_for_line("sent SIGTERM")) << p.stderr_text();
  double secs = 0;
  EXPECT_EQ(p.wait_exit(secs, kExit), 128 + SIGKILL) << p.stderr_text();
  Trace t;
  ASSERT_TRUE(read_trace_file(dir + "/t.json", t).is_ok()) << p.stderr_text();
  EXPECT_TRUE(t.meta.interrupted);
}

TEST(RecordProcessControl, ASecondSignalEndsACommandThatIgnoresSignals) {
  const std::string dir = stalldx::testing::temp_dir("rec-term");
  Spawned p({STALLDX_BINARY, "record", "--kill-after", "1", "--trace", dir + "/t.json", "--", "/bin/sh", "-c",
             "trap '' INT TERM; echo ready >&2; while :; do sleep 1; done"});
  ASSERT_TRUE(p.wait_for_line("ready")) << p.stderr_text();
  p.signal(SIGINT);
  ASSERT_TRUE(p.wait_for_line("interrupt again")) << p.stderr_text();
  p.signal(SIGINT);
  double secs = 0;
  EXPECT_EQ(p.wait_exit(secs, kExit), 128 + SIGKILL) << p.stderr_text();
  EXPECT_NE(p.stderr_text().find("after a second interrupt"), std::string::npos) << p.stderr_text();
}

// Before: the forwarded SIGINT stayed pending in the stopped command and record waited for ever.
TEST(RecordProcessControl, ASuspendedCommandIsReportedAndCtrlCStillEndsIt) {
  const std::string dir = stalldx::testing::temp_dir("rec-stop");
  Spawned p({STALLDX_BINARY, "record", "--trace", dir + "/t.json", "--", "/bin/sh", "-c", "kill -STOP $$; sleep 100"});
  ASSERT_TRUE(p.wait_for_line("is suspended (SIGSTOP)")) << p.stderr_text();
  p.signal(SIGINT);
  double secs = 0;
  EXPECT_EQ(p.wait_exit(secs, kExit), 130) << p.stderr_text();
}

// A loop of 6 steps recorded with --keep-parts (trace dir/whole.json): its parts folder, "" on failure.
std::string kept_parts(const std::string& dir, const char* workers) {
  const auto run = run_command(
      {STALLDX_BINARY, "record", "--keep-parts", "--trace", dir + "/whole.json", "--", NVTX_LOOP, "--steps", "6", "--workers", workers, "--read-ms", "1"});
  std::smatch m;
  EXPECT_EQ(run.rc, 0) << run.log;
  if (run.rc != 0 || !std::regex_search(run.log, m, std::regex("parts kept in (\\S+)"))) return "";
  return m[1];
}

// A stop during the merge keeps what was merged, marks it, and the folder left behind merges whole later.
TEST(RecordProcessControl, AnInterruptedMergeKeepsItsPartAndTheRestMergesLater) {
  const std::string dir = stalldx::testing::temp_dir("rec-merge");
  const std::string parts = kept_parts(dir, "3");
  ASSERT_FALSE(parts.empty());
  Trace whole;
  ASSERT_TRUE(read_trace_file(dir + "/whole.json", whole).is_ok());

  MergeOptions o;
  int asked = 0;
  o.should_stop = [&asked] { return ++asked > 1; };  // the interrupt arrives after the first part
  Trace part;
  MergeReport rep;
  ASSERT_TRUE(merge_parts(parts, RoleMap::defaults(), o, part, rep).is_ok());
  EXPECT_TRUE(rep.merge_stopped);
  EXPECT_TRUE(part.meta.interrupted);
  EXPECT_GT(part.ranges.size(), 0u);
  EXPECT_LT(part.ranges.size(), whole.ranges.size());
  EXPECT_TRUE(fs::exists(parts));

  const auto again = run_command({STALLDX_BINARY, "record", "--merge", parts, "--trace", dir + "/again.json"});
  ASSERT_EQ(again.rc, 0) << again.log;
  Trace merged;
  ASSERT_TRUE(read_trace_file(dir + "/again.json", merged).is_ok());
  EXPECT_EQ(merged.ranges.size(), whole.ranges.size());
  EXPECT_FALSE(merged.meta.interrupted);
  EXPECT_NE(again.log.find("merged from"), std::string::npos) << again.log;
  EXPECT_FALSE(fs::exists(parts)) << "merged whole and written: the folder goes";
  EXPECT_EQ(run_command({STALLDX_BINARY, "record", "--merge", dir, "--", "true"}).rc, 2) << "--merge takes no command";
}

// `record --merge DIR` removes the part files it merged and nothing else. Before, it removed DIR whole:
// `--merge /tmp` emptied /tmp (found 2026-12-06, here).
TEST(RecordProcessControl, MergeRemovesOnlyThePartsAndRefusesAFolderOfNone) {
  const std::string dir = stalldx::testing::temp_dir("rec-merge-own");
  const std::string parts = kept_parts(dir, "2");
  ASSERT_FALSE(parts.empty());
  std::size_t part_files = 0;
  for (const auto& e : fs::directory_iterator(parts)) part_files += is_part_file_name(e.path().filename().string()) ? 1 : 0;
  EXPECT_GT(part_files, 3u);
  for (const char* name : {"notes.txt", "12.ranges.bak", "capture.old", "x.proc"}) {
    std::ofstream(parts + "/" + name) << "theirs\n";
    EXPECT_FALSE(is_part_file_name(name)) << name;
  }
  fs::create_directory(parts + "/sub");
  const auto merged = run_command({STALLDX_BINARY, "record", "--merge", parts, "--trace", dir + "/again.json"});
  ASSERT_EQ(merged.rc, 0) << merged.log;
  EXPECT_NE(merged.log.find("5 entries not of stalldx's parts: left there, with the folder"), std::string::npos) << merged.log;
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(parts)) left.insert(e.path().filename().string());
  EXPECT_EQ(left, (std::set<std::string>{"notes.txt", "12.ranges.bak", "capture.old", "x.proc", "sub"}));

  // A folder with no parts: refused, untouched.
  const auto none = run_command({STALLDX_BINARY, "record", "--merge", parts, "--trace", dir + "/none.json"});
  EXPECT_NE(none.rc, 0);
  EXPECT_NE(none.log.find("no part files of a stalldx record in it"), std::string::npos) << none.log;
  EXPECT_EQ(std::distance(fs::directory_iterator(parts), fs::directory_iterator()), 5);
  for (const char* name : {"4242.proc", "4242.names", "4242.4243.ranges", "4242.cuda.json", "4242.cuda.w12.json", "4242.windows",
                           "4242.cuda.started", "capture", ".capture-Ab12Cd", "4242.cuda.w3.json.partial-x1y2z3"})
    EXPECT_TRUE(is_part_file_name(name)) << name;
}

// Before: the recorded program died of SIGBUS in the injection library and record said only "write failed", exit 1.
// A process whose CUPTI the recorder kept attached between windows (it uses CUDA graphs) says so in its
// window part; the merged trace carries it, with the pid, and the summary says it.
TEST(RecordProcessControl, AWindowPartThatKeptCuptiAttachedIsSaidInTheTraceAndTheSummary) {
  const std::string dir = stalldx::testing::temp_dir("rec-merge-kept");
  const std::string parts = kept_parts(dir, "1");
  ASSERT_FALSE(parts.empty());
  std::string pid;
  for (const auto& e : fs::directory_iterator(parts))
    if (const std::string n = e.path().filename().string(); n.ends_with(".proc")) pid = n.substr(0, n.size() - 5);
  ASSERT_FALSE(pid.empty());
  Trace window;
  window.meta.device = "CUDA (the recorded program's)";
  window.meta.config[kCuptiKeptKey] = "it uses CUDA graphs, which a finalize between windows breaks";
  ASSERT_TRUE(write_trace_file(window, parts + "/" + pid + ".cuda.w0.json").is_ok());
  const auto merged = run_command({STALLDX_BINARY, "record", "--merge", parts, "--trace", dir + "/merged.json"});
  ASSERT_EQ(merged.rc, 0) << merged.log;
  EXPECT_NE(merged.log.find("CUPTI kept attached between windows, its records off (pid " + pid + ": it uses CUDA graphs"), std::string::npos)
      << merged.log;
  Trace t;
  ASSERT_TRUE(read_trace_file(dir + "/merged.json", t).is_ok());
  ASSERT_EQ(t.meta.config.count(kCuptiKeptKey), 1u);
  EXPECT_EQ(t.meta.config[kCuptiKeptKey], "pid " + pid + ": it uses CUDA graphs, which a finalize between windows breaks");
}

TEST(RecordProcessControl, AFullDiskNeverKillsTheCommandAndItsStatusIsPassedOn) {
  const std::string dir = stalldx::testing::temp_dir("rec-full");
  if (mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=512k") != 0) GTEST_SKIP() << "cannot mount a small tmpfs here (needs root): " << std::strerror(errno);
  const auto run = run_command({STALLDX_BINARY, "record", "--trace", dir + "/t.json", "--", NVTX_LOOP, "--steps", "12000",
                                                  "--workers", "2", "--read-ms", "0", "--decode-ms", "0", "--step-ms", "0", "--exit", "3"});
  EXPECT_EQ(run.rc, 3) << "the command's own status, not a crash (135) nor stalldx's 1\n" << run.log;
  EXPECT_NE(run.log.find("command exited with code 3"), std::string::npos) << run.log;
  EXPECT_NE(run.log.find("ran out of space"), std::string::npos) << run.log;
  EXPECT_NE(run.log.find("the recording failed"), std::string::npos) << run.log;
  EXPECT_NE(run.log.find("ranges dropped"), std::string::npos) << run.log;
  umount2(dir.c_str(), MNT_DETACH);
}

// --live-json on a disk that fills while the program runs: the lines that could not be written are
// counted and said, never dropped in silence (the live lines on stderr go on).
TEST(RecordProcessControl, LiveJsonLinesLostToAFullDiskAreCounted) {
  const std::string dir = stalldx::testing::temp_dir("rec-live-full");
  const std::string disk = dir + "/disk";
  fs::create_directories(disk);
  if (mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=256k") != 0) GTEST_SKIP() << "cannot mount a small tmpfs here (needs root): " << std::strerror(errno);
  Spawned rec({STALLDX_BINARY, "record", "--live", "1", "--live-json", disk + "/live.jsonl", "--trace", dir + "/t.json", "--", NVTX_LOOP,
               "--steps", "100000", "--workers", "1", "--read-ms", "5"});
  ASSERT_TRUE(rec.wait_for_line("stalldx live")) << rec.stderr_text();
  {  // the disk fills up (the first line is written), the JSON file's last page too
    std::ofstream filler(disk + "/filler", std::ios::binary);
    const std::string block(4096, 'x');
    while (filler.write(block.data(), static_cast<std::streamsize>(block.size())) && filler.flush()) {
    }
    const int fd = ::open((disk + "/live.jsonl").c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    while (::write(fd, "\n", 1) == 1) {
    }
    ::close(fd);
  }
  const auto lines = [&] {
    std::size_t n = 0;
    for (std::size_t at = 0; (at = rec.stderr_text().find("stalldx live", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  const std::size_t before = lines();
  while (lines() < before + 2) ASSERT_TRUE(rec.wait_for_line("stalldx live")) << rec.stderr_text();
  rec.signal(SIGINT);
  double secs = 0;
  rec.wait_exit(secs);
  EXPECT_NE(rec.stderr_text().find("live lines not written (No space left on device)"), std::string::npos) << rec.stderr_text();
  umount2(disk.c_str(), MNT_DETACH);
}

TEST(RecordProcessControl, AProcessThatOutlivesTheCommandIsNamed) {
  const std::string dir = stalldx::testing::temp_dir("rec-daemon");
  const std::string log = dir + "/daemon.log";
  // The command starts a recorded program in the background and ends once it has recorded a step.
  const auto run = run_command(
      {STALLDX_BINARY, "record", "--trace", dir + "/t.json", "--", "/bin/sh", "-c",
       fmt::format("{} --steps 1000000 --workers 1 --read-ms 1 --announce 2>{} & until grep -q 'step 1 done' {} 2>/dev/null; do sleep 0.01; done", NVTX_LOOP,
                   log, log)});
  // The loop and its worker outlive the command: both are named (and ended here).
  const std::regex named("pid (\\d+) was still running when the command ended");
  std::vector<std::string> pids;
  for (auto it = std::sregex_iterator(run.log.begin(), run.log.end(), named); it != std::sregex_iterator(); ++it) {
    pids.push_back((*it)[1]);
    kill(std::stoi((*it)[1]), SIGKILL);
  }
  ASSERT_EQ(pids.size(), 2u) << run.log;
  EXPECT_EQ(run.rc, 0) << run.log;
  Trace t;
  ASSERT_TRUE(read_trace_file(dir + "/t.json", t).is_ok());
  EXPECT_EQ(t.meta.config.at("outlived_command"), pids[0] + "," + pids[1]);
}

// Before: `mpirun -np 3 stalldx record --trace X` wrote every rank to X: two were lost.
TEST(RecordProcessControl, RanksOfAnMpiLaunchWriteOneTraceEach) {
  const std::string dir = stalldx::testing::temp_dir("rec-rank");
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  const auto run = run_command({STALLDX_BINARY, "record", "--trace", dir + "/t.json", "--", NVTX_LOOP, "--steps", "3"});
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  ASSERT_EQ(run.rc, 0) << run.log;
  EXPECT_FALSE(fs::exists(dir + "/t.json"));
  Trace t;
  ASSERT_TRUE(read_trace_file(dir + "/t.rank1.json", t).is_ok()) << run.log;
  EXPECT_EQ(t.meta.config.at("rank"), "1");
}
#endif

TEST(LauncherRank, ReadFromTheLaunchersEnvironmentAndCheckedForSense) {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMIX_SIZE", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID",
                        "SLURM_NTASKS", "RANK", "WORLD_SIZE"})
    unsetenv(v);
  EXPECT_FALSE(launcher_rank().has_value());
  setenv("RANK", "2", 1);
  setenv("WORLD_SIZE", "4", 1);
  ASSERT_TRUE(launcher_rank().has_value());
  EXPECT_EQ(launcher_rank()->rank, 2);
  EXPECT_EQ(launcher_rank()->source, "RANK");
  setenv("RANK", "4", 1);  // outside the world
  EXPECT_FALSE(launcher_rank().has_value());
  setenv("RANK", "1x", 1);
  EXPECT_FALSE(launcher_rank().has_value());
  setenv("WORLD_SIZE", "1", 1);  // one of one: no rank suffix
  setenv("RANK", "0", 1);
  EXPECT_FALSE(launcher_rank().has_value());
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  EXPECT_EQ(rank_trace_path("a/out.json.gz", 3), "a/out.rank3.json.gz");
}

}  // namespace
}  // namespace stalldx::record
