// Host recording: bounded thread-local buffers lose nothing below the bound and count exactly what they
// drop above it; the macros, step marks and counters land in the trace with their ids.
#include <gtest/gtest.h>

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "stalldx/profiler.h"

namespace stalldx {
namespace {

TEST(Recorder, RangesCarryRoleIdsAndBytes) {
  Session s;
  SessionOptions o;
  o.cpu_time = true;
  ASSERT_TRUE(s.start(o).is_ok());
  set_thread_name("test-main");
  {
    StepMark mark(4, 9);
    STALLDX_RANGE_VAR(r, retrieval, "read", RangeIds{-1, 9, 77});
    r.set_bytes(1234);
  }
  STALLDX_COUNTER("queue", 3.5);
  s.stop();
  const Trace& t = s.trace();
  ASSERT_EQ(t.ranges.size(), 2u);
  const HostRange* read = nullptr;
  const HostRange* step = nullptr;
  for (const HostRange& r : t.ranges) (r.role == Role::retrieval ? read : step) = &r;
  ASSERT_TRUE(read && step);
  EXPECT_EQ(t.name(read->name), "read");
  EXPECT_EQ(read->batch, 9);
  EXPECT_EQ(read->sample, 77);
  EXPECT_EQ(read->bytes, 1234u);
  EXPECT_GE(read->cpu_ns, 0);
  EXPECT_EQ(step->step, 4);
  EXPECT_EQ(step->batch, 9);
  EXPECT_LE(step->begin_ns, read->begin_ns);  // nested: the step encloses the read
  EXPECT_GE(step->end_ns, read->end_ns);
  ASSERT_EQ(t.counters.size(), 1u);
  EXPECT_EQ(t.counters[0].value, 3.5);
  ASSERT_EQ(t.threads.size(), 1u);
  EXPECT_EQ(t.threads[0].name, "test-main");
  EXPECT_EQ(t.meta.dropped_host, 0u);
}

// Two CPU-bound threads pinned to one CPU: the one inside a range must have waited on the run queue
// (the scheduler shares the CPU), and cpu + queued time fit in the range's wall time.
TEST(Recorder, RunQueueDelayIsRecordedWhenTheThreadIsDeniedACpu) {
  if (access("/proc/thread-self/schedstat", R_OK) != 0) GTEST_SKIP() << "this kernel has no /proc/thread-self/schedstat";
  cpu_set_t one;
  CPU_ZERO(&one);
  if (sched_getaffinity(0, sizeof one, &one) != 0) GTEST_SKIP() << "sched_getaffinity failed";
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &one)) ++cpu;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  std::atomic<bool> spinning{false}, done{false};
  std::thread rival([&] {
    sched_setaffinity(0, sizeof one, &one);
    spinning.store(true);
    while (!done.load(std::memory_order_relaxed)) {
    }
  });
  cpu_set_t saved;
  sched_getaffinity(0, sizeof saved, &saved);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  while (!spinning.load()) std::this_thread::yield();  // readiness: the rival runs on our CPU
  Session s;
  SessionOptions o;
  o.cpu_time = true;
  ASSERT_TRUE(s.start(o).is_ok());
  {
    STALLDX_RANGE_VAR(r, decode, "spin", RangeIds{-1, 0, 0});
    const auto cpu_now = [] {
      timespec ts{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
    };
    const std::int64_t start = cpu_now();
    while (cpu_now() - start < 30'000'000) {
    }  // 30 ms of our own CPU time
  }
  s.stop();
  done.store(true);
  rival.join();
  sched_setaffinity(0, sizeof saved, &saved);
  ASSERT_EQ(s.trace().ranges.size(), 1u);
  const HostRange& r = s.trace().ranges[0];
  ASSERT_GE(r.runq_ns, 0) << "run-queue delay not sampled";
  EXPECT_GT(r.runq_ns, 0);
  EXPECT_LE(r.cpu_ns + r.runq_ns, (r.end_ns - r.begin_ns) + 2'000'000);  // + the fraction's rounding and clock granularity
}

TEST(Recorder, NothingRecordedOutsideASession) {
  { STALLDX_RANGE(user, "before"); }
  Session s;
  ASSERT_TRUE(s.start({}).is_ok());
  s.stop();
  { STALLDX_RANGE(user, "after"); }
  EXPECT_TRUE(s.trace().ranges.empty());
}

void record_many(int n) {
  for (int i = 0; i < n; ++i) {
    STALLDX_RANGE(decode, "work", RangeIds{-1, i, i});
  }
}

TEST(Recorder, ConcurrentThreadsBelowTheBoundLoseNothing) {
  Session s;
  SessionOptions o;
  o.ranges_per_thread = 5000;
  o.cpu_time = false;
  ASSERT_TRUE(s.start(o).is_ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) threads.emplace_back(record_many, 5000);
  for (auto& th : threads) th.join();
  s.stop();
  EXPECT_EQ(s.trace().ranges.size(), 8u * 5000u);
  EXPECT_EQ(s.trace().meta.dropped_host, 0u);
  EXPECT_EQ(s.trace().threads.size(), 8u);
}

TEST(Recorder, AboveTheBoundDropsAreCountedExactly) {
  Session s;
  SessionOptions o;
  o.ranges_per_thread = 1000;
  o.cpu_time = false;
  ASSERT_TRUE(s.start(o).is_ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) threads.emplace_back(record_many, 1000 + 337 * t);
  for (auto& th : threads) th.join();
  s.stop();
  EXPECT_EQ(s.trace().ranges.size(), 6u * 1000u);
  std::uint64_t expected_drops = 0;
  for (int t = 0; t < 6; ++t) expected_drops += 337u * static_cast<unsigned>(t);
  EXPECT_EQ(s.trace().meta.dropped_host, expected_drops);
}

TEST(Recorder, SecondSessionStartsEmpty) {
  for (int round = 0; round < 2; ++round) {
    Session s;
    ASSERT_TRUE(s.start({}).is_ok());
    record_many(10);
    s.stop();
    EXPECT_EQ(s.trace().ranges.size(), 10u) << "round " << round;
  }
}

TEST(Recorder, TwoSessionsAtOnceIsAnError) {
  Session a, b;
  ASSERT_TRUE(a.start({}).is_ok());
  EXPECT_FALSE(b.start({}).is_ok());
  a.stop();
}

}  // namespace
}  // namespace stalldx
