// A user's MPI program (mpi_loop: NVTX steps, reads, a host MPI_Allreduce) under `record`, launched both
// ways users launch it: `mpirun -np 3 stalldx record --trace X -- prog` (each rank records itself) and
// `stalldx record --trace X -- mpirun -np 3 prog` (one record, the launcher's ranks told apart by their
// environment). Either way: three traces X.rankR.json, and across them rank 2 — slowed in its reads —
// named the straggler with retrieval on >= 90 % of steady steps; a balanced run names none. Waiting ranks
// yield their CPU (mpi_yield_when_idle): three ranks spinning in the all-reduce on two cores would starve
// the slow one of the CPU its reads wake up to, which stalldx rightly calls decoding (CPU-starved).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <filesystem>

#include <fmt/format.h>

#include "test_support.h"

namespace {

#if defined(STALLDX_MPIRUN) && defined(MPI_LOOP)
struct Job {
  int rc = -1;
  std::string log, dir;
  nlohmann::json cross;
};

// `inside`: record outside mpirun (record -- mpirun ...); else mpirun outside record.
Job run_job(const std::string& tag, bool inside, const std::string& loop_args) {
  Job j;
  j.dir = stalldx::testing::temp_dir("record-ranks-" + tag);
  const std::string mpirun = fmt::format("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 {} --oversubscribe --mca mpi_yield_when_idle 1 -np 3", STALLDX_MPIRUN);
  const std::string record = fmt::format("{} record --warmup 2 --trace {}/x.json", STALLDX_BINARY, j.dir);
  const std::string cmd = inside ? fmt::format("{} -- env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 {} {} {}", record, mpirun,
                                               MPI_LOOP, loop_args)
                                 : fmt::format("{} {} -- {} {}", mpirun, record, MPI_LOOP, loop_args);
  // Open MPI's own allocations outlive MPI_Finalize: no leak report from the sanitizer builds for them.
  j.rc = WEXITSTATUS(std::system(fmt::format("ASAN_OPTIONS=\"$ASAN_OPTIONS:detect_leaks=0\" {} > {}/log.txt 2>&1", cmd, j.dir).c_str()));
  j.log = stalldx::testing::read_file(j.dir + "/log.txt");
  const std::string diag = fmt::format("{} diagnose --warmup 2 {d}/x.rank0.json {d}/x.rank1.json {d}/x.rank2.json --json > {d}/cross.json 2> {d}/diag.txt",
                                       STALLDX_BINARY, fmt::arg("d", j.dir));
  if (WEXITSTATUS(std::system(diag.c_str())) == 0) j.cross = nlohmann::json::parse(stalldx::testing::read_file(j.dir + "/cross.json"));
  else j.log += stalldx::testing::read_file(j.dir + "/diag.txt");
  return j;
}

void expect_straggler(const Job& j, int rank) {
  ASSERT_EQ(j.rc, 0) << j.log;
  ASSERT_TRUE(j.cross.is_object()) << j.log;
  EXPECT_EQ(j.cross["world_size"], 3) << j.log;
  EXPECT_EQ(j.cross["run_straggler"], rank) << j.cross.dump(1);
  int steady = 0, named = 0;
  for (const auto& s : j.cross["steps"]) {
    ++steady;
    named += s["straggler"] == rank && s["straggler_verdict"] == "retrieval";
  }
  EXPECT_GE(steady, 15);
  EXPECT_GE(named, steady * 9 / 10) << j.cross.dump(1);
}

TEST(RecordRanks, MpirunOutsideRecordWritesATracePerRankAndNamesTheSlowReader) {
  const Job j = run_job("outside", false, "--steps 22 --slow-rank 2 --slow-read-ms 60");
  expect_straggler(j, 2);
}

TEST(RecordRanks, RecordOutsideMpirunSplitsTheRanksAndNamesTheSlowReader) {
  const Job j = run_job("inside", true, "--steps 22 --slow-rank 2 --slow-read-ms 60");
  expect_straggler(j, 2);
  EXPECT_NE(j.log.find("rank 2 of 3"), std::string::npos) << j.log;
  EXPECT_NE(j.log.find("straggler"), std::string::npos) << "record prints the cross-rank report itself: " << j.log;
}

TEST(RecordRanks, ABalancedJobNamesNoStraggler) {
  const Job j = run_job("balanced", true, "--steps 22");
  ASSERT_EQ(j.rc, 0) << j.log;
  ASSERT_TRUE(j.cross.is_object()) << j.log;
  EXPECT_EQ(j.cross["run_straggler"], -1) << j.cross.dump(1);
}
#else
TEST(RecordRanks, EndToEnd) { GTEST_SKIP() << "this build has no MPI (libopenmpi-dev openmpi-bin) or no injection library"; }
#endif

}  // namespace
