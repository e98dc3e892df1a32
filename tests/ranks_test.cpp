// Ranks end to end: `mpirun --oversubscribe -np 3 stalldx run --device none` with tiny batches, then
// `stalldx diagnose out.rank*.json --json`. Labelled `mpi`; skips (with the reason) where the build has
// no MPI or no mpirun. Open MPI refuses root without its two consent variables: the tests set them.
// Under ASan the ranks run without leak checking: Open MPI leaves allocations in plugins it has
// unloaded, which LeakSanitizer cannot attribute or suppress; the same stalldx code is leak-checked by
// the rest of the suite.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <csignal>
#include <cstdio>

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "test_dataset.h"
#include "test_support.h"

namespace {

struct Job {
  int rc = -1;
  std::string log;
  nlohmann::json cross;  // diagnose --json across the ranks
  std::string dir;       // where the traces and diagnose --html's ranks.html are
};

Job run_ranks(const std::string& tag, const std::string& args) {
#if !defined(STALLDX_MPIRUN)
  (void)tag;
  (void)args;
  return {};
#else
  Job j;
  const std::string dir = stalldx::testing::temp_dir("ranks-" + tag);
  const std::string cmd = fmt::format(
      "ASAN_OPTIONS=\"$ASAN_OPTIONS:detect_leaks=0\" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 {} --oversubscribe -np 3 {} run "
      "--data {} --device none --warmup 2 --allreduce-mb 1 --trace {}/out.json {} > {}/log.txt 2>&1",
      STALLDX_MPIRUN, STALLDX_BINARY, stalldx::testing::small_dataset(), dir, args, dir);
  j.rc = WEXITSTATUS(std::system(cmd.c_str()));
  j.log = stalldx::testing::read_file(dir + "/log.txt");
  j.dir = dir;
  const std::string diag = fmt::format("{} diagnose {}/out.rank0.json {}/out.rank1.json {}/out.rank2.json --json --html {}/ranks.html > {}/cross.json "
                                       "2> {}/diag.txt", STALLDX_BINARY, dir, dir, dir, dir, dir, dir);
  if (WEXITSTATUS(std::system(diag.c_str())) == 0) j.cross = nlohmann::json::parse(stalldx::testing::read_file(dir + "/cross.json"));
  else j.log += stalldx::testing::read_file(dir + "/diag.txt");
  return j;
#endif
}

bool skip_reason(std::string& why) {
#if !defined(STALLDX_MPIRUN)
  why = "this build has no MPI (install libopenmpi-dev openmpi-bin)";
  return true;
#else
  why.clear();
  return false;
#endif
}

int straggler_steps(const nlohmann::json& cross, int rank, const std::string& verdict) {
  int n = 0;
  for (const auto& s : cross["steps"]) n += s["straggler"] == rank && s["straggler_verdict"] == verdict;
  return n;
}

TEST(Ranks, BalancedRanksHaveNoStraggler) {
  if (std::string why; skip_reason(why)) GTEST_SKIP() << why;
  // 150 ms steps: under ASan on 2 cores the ranks leave each all-reduce up to ~10 ms apart (rank 0 last),
  // and arrive at the next that far apart; the straggler threshold is 10 % of the step.
  const Job j = run_ranks("balanced", "--batch 8 --workers 2 --steps 16 --step-ms 150");
  ASSERT_EQ(j.rc, 0) << j.log;
  ASSERT_FALSE(j.cross.is_null()) << j.log;
  EXPECT_EQ(j.cross["world_size"], 3);
  EXPECT_EQ(j.cross["run_straggler"], -1) << j.cross.dump(1);
}

TEST(Ranks, TheRankWithSlowReadsIsTheStragglerWithRetrievalOnNearlyEveryStep) {
  if (std::string why; skip_reason(why)) GTEST_SKIP() << why;
  const Job j = run_ranks("slow-reads", "--batch 8 --workers 2 --steps 20 --step-ms 20 --rank-override 2:read-latency-ms=30");
  ASSERT_EQ(j.rc, 0) << j.log;
  ASSERT_FALSE(j.cross.is_null()) << j.log;
  EXPECT_EQ(j.cross["run_straggler"], 2) << j.cross.dump(1);
  const int steps = static_cast<int>(j.cross["steps"].size());
  ASSERT_GE(steps, 20);
  EXPECT_GE(straggler_steps(j.cross, 2, "retrieval"), 0.95 * steps) << j.cross.dump(1);
  EXPECT_NE(stalldx::testing::read_file(j.dir + "/ranks.html").find("<b>rank 2 is the straggler</b>"), std::string::npos) << "diagnose --html across ranks";
}

TEST(Ranks, TheRankWithOneWorkerIsTheStragglerWithDecoding) {
  if (std::string why; skip_reason(why)) GTEST_SKIP() << why;
  // One worker decodes 48 images in ~50 ms here, two in ~25; a step is 20 ms + the all-reduce (~10 ms on
  // 2 oversubscribed cores): a margin of 10+ ms on both sides.
  const Job j = run_ranks("one-worker", "--batch 48 --workers 2 --steps 20 --step-ms 20 --rank-override 1:workers=1");
  ASSERT_EQ(j.rc, 0) << j.log;
  ASSERT_FALSE(j.cross.is_null()) << j.log;
  EXPECT_EQ(j.cross["run_straggler"], 1) << j.cross.dump(1);
  for (const auto& r : j.cross["ranks"])
    if (r["rank"] == 1) {
      EXPECT_EQ(r["verdict_as_straggler"], "decoding") << j.cross.dump(1);
    }
}

TEST(Ranks, EachRankReadsADisjointShardAndWritesItsOwnTrace) {
  if (std::string why; skip_reason(why)) GTEST_SKIP() << why;
  const Job j = run_ranks("shards", "--batch 4 --workers 1 --steps 3 --step-ms 1 --rank-override 0:batch=8");
  ASSERT_EQ(j.rc, 0) << j.log;
  auto line = [&](int r) {
    const std::size_t at = j.log.find(fmt::format("rank {} of 3: ", r));
    return at == std::string::npos ? std::string() : j.log.substr(at, j.log.find('\n', at) - at);
  };
  EXPECT_NE(line(0).find("| batch 8 |"), std::string::npos) << "the override reached rank 0\n" << j.log;
  EXPECT_NE(line(1).find("| batch 4 |"), std::string::npos) << "and rank 0 only\n" << j.log;
  EXPECT_NE(line(2).find("trace " + std::string("")), std::string::npos);
  EXPECT_NE(line(2).find(".rank2.json"), std::string::npos) << j.log;
  EXPECT_NE(j.log.find("/out.rank*.json names each step's straggler"), std::string::npos) << "rank 0 says how to diagnose them all\n" << j.log;
}

TEST(Ranks, ABadOverrideFailsEveryRankBeforeAnyStarts) {
  if (std::string why; skip_reason(why)) GTEST_SKIP() << why;
  const Job j = run_ranks("bad-override", "--batch 4 --steps 3 --rank-override 7:workers=2");
  EXPECT_NE(j.rc, 0);
  EXPECT_NE(j.log.find("'7' is not a rank of this job (0..2)"), std::string::npos) << j.log;
}

#if defined(STALLDX_MPIRUN)
// Runs 3 ranks for many steps and sends `sig` to rank 1 once its own "warm-up done" line (which carries
// its pid) has been read: a readiness signal, not a sleep. Returns mpirun's status; `log` gets the output.
// odls_base_sigkill_timeout: the launcher's grace between SIGTERM and SIGKILL (Slurm's KillWait is 30 s).
int signal_rank1_after_warmup(const std::string& dir, int sig, std::string& log) {
  const std::string cmd = fmt::format(
      "ASAN_OPTIONS=\"$ASAN_OPTIONS:detect_leaks=0\" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 {} --mca odls_base_sigkill_timeout 5 "
      "--oversubscribe -np 3 {} run --data {} --device none --batch 8 --workers 1 --warmup 2 --steps 2000 --step-ms 20 --allreduce-mb 1 "
      "--trace {}/out.json 2>&1",
      STALLDX_MPIRUN, STALLDX_BINARY, stalldx::testing::small_dataset(), dir);
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  long victim = -1;
  char buf[8192];
  while (std::fgets(buf, sizeof buf, p) != nullptr) {
    const std::string line = buf;
    log += line;
    const std::string mark = "(rank 1 of 3, pid ";
    if (const auto at = line.find(mark); victim < 0 && at != std::string::npos && line.find("warm-up done") != std::string::npos) {
      victim = std::stol(line.substr(at + mark.size()));
      if (kill(static_cast<pid_t>(victim), sig) != 0) log += "kill failed\n";
    }
  }
  const int rc = pclose(p);
  if (victim < 0) log += "rank 1 never said warm-up done\n";
  return rc;
}

nlohmann::json diagnose_ranks(const std::string& dir, const std::vector<int>& ranks, std::string& log) {
  std::string files;
  for (int r : ranks) files += fmt::format(" {}/out.rank{}.json", dir, r);
  const std::string diag = fmt::format("{} diagnose{} --json > {}/cross.json 2> {}/diag.txt", STALLDX_BINARY, files, dir, dir);
  if (WEXITSTATUS(std::system(diag.c_str())) != 0) {
    log += stalldx::testing::read_file(dir + "/diag.txt");
    return {};
  }
  return nlohmann::json::parse(stalldx::testing::read_file(dir + "/cross.json"));
}
#endif

// A rank killed mid-run (SIGKILL: it writes nothing) — the others were waiting for it in a step's
// all-reduce; the launcher then stops them (SIGTERM), they give up waiting, write their traces marked,
// and the analysis of the two traces names the missing rank as the one they waited for.
TEST(Ranks, ARankKilledMidRunIsNamedFromTheOthersTraces) {
  if (std::string why; skip_reason(why)) GTEST_SKIP() << why;
#if defined(STALLDX_MPIRUN)
  const std::string dir = stalldx::testing::temp_dir("ranks-killed");
  std::string log;
  const int rc = signal_rank1_after_warmup(dir, SIGKILL, log);
  ASSERT_EQ(log.find("never said"), std::string::npos) << log;
  EXPECT_NE(WEXITSTATUS(rc), 0) << log;
  EXPECT_FALSE(std::filesystem::exists(dir + "/out.rank1.json"));
  const nlohmann::json cross = diagnose_ranks(dir, {0, 2}, log);
  ASSERT_FALSE(cross.is_null()) << log;
  EXPECT_EQ(cross["missing_ranks"], nlohmann::json::array({1}));
  ASSERT_FALSE(cross["steps"].empty()) << cross.dump(1);
  const nlohmann::json& last = cross["steps"].back();
  EXPECT_EQ(last["straggler"], 1) << cross.dump(1);
  EXPECT_EQ(last["never_arrived"], true);
  std::vector<int> waiting = last["waiting"].get<std::vector<int>>();
  std::sort(waiting.begin(), waiting.end());
  EXPECT_EQ(waiting, (std::vector<int>{0, 2})) << cross.dump(1);
  for (const auto& r : cross["ranks"]) EXPECT_EQ(r["interrupted"], true) << "the others' traces are marked";
#endif
}

// A rank that fails (its own error: here the first corrupt file it meets, with on-bad-sample=fail on
// rank 1 only) says so at the end of its step: every rank stops at that step and writes its trace, and
// the analysis says who left and who stopped with it. (A signal on one rank alone, while it waits in the
// agreement, ends its wait like the launcher's SIGTERM: the others then see a rank that never came.)
TEST(Ranks, ARankThatFailsStopsTheOthersAtTheSameStepAndIsNamed) {
  if (std::string why; skip_reason(why)) GTEST_SKIP() << why;
#if defined(STALLDX_MPIRUN)
  const std::string dir = stalldx::testing::temp_dir("ranks-left");
  ASSERT_EQ(WEXITSTATUS(std::system(fmt::format("{} dataset {}/ds --classes 2 --per-class 24 > /dev/null 2>&1", STALLDX_BINARY, dir).c_str())), 0);
  for (int i = 0; i < 24; i += 2)  // every other file of class 0: each rank's shard meets some within an epoch
    stalldx::testing::write_file(fmt::format("{}/ds/class_000/img_{:06d}.jpg", dir, i), "\xff\xd8 not a jpeg");
  const std::string cmd = fmt::format(
      "ASAN_OPTIONS=\"$ASAN_OPTIONS:detect_leaks=0\" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 {} --oversubscribe -np 3 {} run "
      "--data {}/ds --device none --batch 4 --workers 1 --warmup 1 --steps 200 --step-ms 5 --allreduce-mb 1 --max-bad-fraction 1 "
      "--rank-override 1:on-bad-sample=fail --trace {}/out.json > {}/log.txt 2>&1",
      STALLDX_MPIRUN, STALLDX_BINARY, dir, dir, dir);
  const int rc = std::system(cmd.c_str());
  std::string log = stalldx::testing::read_file(dir + "/log.txt");
  EXPECT_NE(WEXITSTATUS(rc), 0) << "rank 1 failed\n" << log;
  EXPECT_NE(log.find("(rank 0 of 3, pid"), std::string::npos) << log;
  EXPECT_NE(log.find("rank 1 left; this rank stopped with it"), std::string::npos) << log;
  const nlohmann::json cross = diagnose_ranks(dir, {0, 1, 2}, log);
  ASSERT_FALSE(cross.is_null()) << log;
  EXPECT_TRUE(cross["missing_ranks"].empty());
  bool named = false;
  for (const auto& n : cross["notes"]) named = named || n.get<std::string>().find("rank 1 left after step") != std::string::npos;
  EXPECT_TRUE(named) << cross.dump(1);
#endif
}

// Without a launcher: a rank's shard can run alone (no all-reduce), but a world that would need to meet
// is refused before anything starts, saying how to launch it.
TEST(Ranks, AWorldWithoutALauncherRunsOneShardAloneOrIsRefused) {
  const std::string dir = stalldx::testing::temp_dir("ranks-alone");
  const std::string base = fmt::format("{} run --data {} --device none --batch 4 --workers 1 --steps 2 --warmup 0 --step-ms 1 --world-size 3 --rank 1",
                                       STALLDX_BINARY, stalldx::testing::small_dataset());
  int rc = WEXITSTATUS(std::system(fmt::format("{} --allreduce-mb 0 --trace {}/o.json > {}/alone.txt 2>&1", base, dir, dir).c_str()));
  EXPECT_EQ(rc, 0) << stalldx::testing::read_file(dir + "/alone.txt");
  EXPECT_TRUE(std::filesystem::exists(dir + "/o.rank1.json"));
  rc = WEXITSTATUS(std::system(fmt::format("{} > {}/refused.txt 2>&1", base, dir).c_str()));
  const std::string log = stalldx::testing::read_file(dir + "/refused.txt");
  EXPECT_EQ(rc, 2) << log;
  EXPECT_NE(log.find("mpirun -np 3"), std::string::npos) << log;
}

}  // namespace
