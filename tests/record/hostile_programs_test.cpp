// stalldx record under programs that do to their process what the recorder does not expect: close every
// descriptor they did not open, run many short-lived threads, exec() themselves. The recorder never
// writes into what the program owns, never holds the program's descriptors, and keeps what each program
// image recorded under its own names.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <string>

#include "stalldx/trace_io.h"
#include "recorded.h"
#include "test_support.h"

namespace stalldx::record {
namespace {

#ifdef NVTX_LOOP
// A program that closes every descriptor it did not open (a daemon's start) and reuses their numbers for
// its own file: the recorder never writes through a number that became the program's — its names file is
// opened again by path — so the program's file holds exactly what the program wrote, and the trace has
// every step and the ranges named after the close. Before: the names file's lines went into whatever file
// held its old number (a held-out Python script that called os.closerange had its main process's part
// overwritten: "not a stalldx range part", no steps).
TEST(HostilePrograms, AProgramThatClosesTheRecordersFilesKeepsItsOwnIntactAndItsSteps) {
  const std::string dir = stalldx::testing::temp_dir("closefds");
  const std::string own = dir + "/own.txt";
  const Recorded r = record(fmt::format("--steps 6 --workers 1 --read-ms 1 --decode-ms 1 --step-ms 1 --close-fds {}", own));
  ASSERT_EQ(r.rc, 0) << r.log;
  EXPECT_EQ(stalldx::testing::read_file(own), "step 1\nstep 2\nstep 3\nstep 4\nstep 5\n");
  Trace t;
  ASSERT_TRUE(read_trace_file(r.trace_path, t).is_ok()) << r.log;
  int steps = 0, late = 0;
  for (const HostRange& h : t.ranges) {
    steps += h.role == Role::step;
    late += t.name(h.name).rfind("late range ", 0) == 0;
  }
  EXPECT_EQ(steps, 6) << r.log;
  EXPECT_EQ(late, 5) << r.log;
}

// Short-lived threads each with a range: the recorder closes each thread's descriptors when it exits, so
// the program's descriptor count stays flat and every thread's range is kept. Before: two descriptors
// held for each thread that ever recorded (600 threads: 1206 open; under `ulimit -n 256` the program ran
// out of descriptors and crashed).
TEST(HostilePrograms, ShortLivedThreadsLeaveNoDescriptorsOpenAndKeepTheirRanges) {
  const Recorded r = record("--steps 2 --workers 1 --read-ms 1 --short-threads 300");
  ASSERT_EQ(r.rc, 0) << r.log;
  const std::size_t at = r.log.find("nvtx_loop: ");
  ASSERT_NE(at, std::string::npos) << r.log;
  const int open = std::atoi(r.log.c_str() + at + 11);
  EXPECT_LT(open, 20) << r.log.substr(at, 60);
  Trace t;
  ASSERT_TRUE(read_trace_file(r.trace_path, t).is_ok()) << r.log;
  int short_ranges = 0;
  for (const HostRange& h : t.ranges) short_ranges += t.name(h.name) == "short thread work";
  EXPECT_EQ(short_ranges, 300);
}

// A process that exec()s (a launcher that becomes the program: the same pid, the same main thread id)
// keeps what its earlier image recorded, under the right names: the new image numbers its names after
// the earlier image's and writes its main thread's ranges beside the earlier ones, not over them. Before:
// the earlier image's main-thread ranges were truncated away, and its other threads' ranges could take
// the new image's names (both numbered from 1 in one names file).
TEST(HostilePrograms, AProcessThatExecsKeepsItsEarlierImagesRangesUnderTheirNames) {
  const Recorded r = record("--steps 4 --workers 1 --read-ms 1 --exec-self");
  ASSERT_EQ(r.rc, 0) << r.log;
  Trace t;
  ASSERT_TRUE(read_trace_file(r.trace_path, t).is_ok()) << r.log;
  std::map<std::string, int> n;
  for (const HostRange& h : t.ranges) n[t.name(h.name)]++;
  EXPECT_EQ(n["before exec"], 1) << r.log;
  EXPECT_EQ(n["earlier image thread"], 1) << r.log;
  EXPECT_EQ(n["step"], 4) << r.log;
  EXPECT_EQ(n["wait_batch"], 4) << r.log;
  EXPECT_EQ(n["read_file"], 4) << r.log;
}
#else
TEST(HostilePrograms, Skipped) { GTEST_SKIP() << "built without the NVTX headers: no injection library"; }
#endif

}  // namespace
}  // namespace stalldx::record
