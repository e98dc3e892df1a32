// Misleading traces are flagged, not trusted (traces may come from anyone): every event twice, absurd
// times, duplicate correlation ids, device work linked to no call, zero-length kernels, rank clocks hours
// apart. Before these checks each was taken at face value (doubled busy time, an overflowed window, the
// "input keeps up" advice on device work no call explains, stragglers named by clock skew).
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/diagnose/ranks.h"

namespace stalldx::diagnose {
namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kBase = 5'000'000 * kMs;  // a CLOCK_MONOTONIC-like origin

// A device-bound loop: 30 steps of 10 ms, each launching a 9.5 ms kernel at its start.
Trace device_bound_loop() {
  Trace t;
  t.threads = {{0, 100, "consumer"}};
  t.meta.host = t.meta.cupti = true;
  t.meta.device = "test GPU";
  t.meta.config["warmup"] = "0";
  for (int k = 0; k < 30; ++k) {
    const std::int64_t b = kBase + k * 10 * kMs;
    HostRange r;
    r.begin_ns = b;
    r.end_ns = b + 10 * kMs;
    r.name = t.intern("step");
    r.role = Role::step;
    r.step = k;
    t.ranges.push_back(r);
    const std::uint64_t corr = static_cast<std::uint64_t>(k) + 1;
    t.calls.push_back({b + kMs / 10, b + kMs / 5, 0, t.intern("cudaLaunchKernel"), corr, k});
    DeviceActivity a;
    a.begin_ns = b + kMs / 4;
    a.end_ns = a.begin_ns + 95 * kMs / 10;
    a.stream = 7;
    a.name = t.intern("conv");
    a.correlation = corr;
    a.step = k;
    t.activities.push_back(a);
  }
  return t;
}

bool has(const Report& r, Advice a) {
  return std::any_of(r.summary.advice.begin(), r.summary.advice.end(), [a](const Advised& x) { return x.kind == a; });
}
std::string notes(const Report& r) {
  std::string s;
  for (const std::string& n : r.coverage.notes) s += n + "\n";
  return s;
}

TEST(TraceDoubts, ACleanTraceRaisesNone) {
  const Report r = diagnose(device_bound_loop());
  EXPECT_EQ(r.coverage.confidence, Confidence::high) << notes(r);
  EXPECT_EQ(r.coverage.repeated_events + r.coverage.absurd_events + r.coverage.duplicate_correlations + r.coverage.unlinked_device, 0u);
  EXPECT_TRUE(has(r, Advice::input_keeps_up));
}

TEST(TraceDoubts, EveryEventTwiceIsCountedOnceAndSaid) {
  const Trace once = device_bound_loop();
  Trace twice = once;
  twice.ranges.insert(twice.ranges.end(), once.ranges.begin(), once.ranges.end());
  twice.calls.insert(twice.calls.end(), once.calls.begin(), once.calls.end());
  twice.activities.insert(twice.activities.end(), once.activities.begin(), once.activities.end());
  const Report a = diagnose(once), b = diagnose(twice);
  EXPECT_EQ(b.coverage.repeated_events, once.ranges.size() + once.calls.size() + once.activities.size());
  EXPECT_EQ(b.coverage.duplicate_correlations, 0u) << "a repeated call is one call";
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    EXPECT_EQ(a.steps[i].verdict, b.steps[i].verdict);
    EXPECT_DOUBLE_EQ(a.steps[i].busy_ms, b.steps[i].busy_ms);
  }
  EXPECT_NE(notes(b).find("repeated an earlier one"), std::string::npos) << notes(b);
  EXPECT_EQ(b.coverage.confidence, Confidence::lowered);
}

TEST(TraceDoubts, AbsurdTimesAreSetAsideNeverOverflowed) {
  Trace t = device_bound_loop();
  HostRange backwards = t.ranges[3];
  std::swap(backwards.begin_ns, backwards.end_ns);
  t.ranges.push_back(backwards);
  DeviceActivity far = t.activities[2];
  far.begin_ns = INT64_MAX - 5;
  far.end_ns = INT64_MAX;
  t.activities.push_back(far);
  RuntimeCall early = t.calls[1];
  early.begin_ns = INT64_MIN;
  t.calls.push_back(early);
  DeviceActivity endless = t.activities[4];
  endless.end_ns = endless.begin_ns + 3 * 86'400 * 1'000 * kMs;  // three days
  t.activities.push_back(endless);
  const Report r = diagnose(t);
  EXPECT_EQ(r.coverage.absurd_events, 4u);
  const Report clean = diagnose(device_bound_loop());
  ASSERT_EQ(r.steps.size(), clean.steps.size());
  for (std::size_t i = 0; i < r.steps.size(); ++i) EXPECT_DOUBLE_EQ(r.steps[i].window_ms, clean.steps[i].window_ms) << i;
  EXPECT_NE(notes(r).find("impossible times"), std::string::npos) << notes(r);
}

TEST(TraceDoubts, DuplicateCorrelationIdsAreFlagged) {
  Trace t = device_bound_loop();
  for (RuntimeCall& c : t.calls) c.correlation = 1 + c.correlation % 3;
  const Report r = diagnose(t);
  EXPECT_EQ(r.coverage.duplicate_correlations, t.calls.size() - 3);
  EXPECT_NE(notes(r).find("correlation id"), std::string::npos) << notes(r);
  EXPECT_EQ(r.coverage.confidence, Confidence::lowered);
}

TEST(TraceDoubts, DeviceWorkLinkedToNoCallWithholdsTheKeepsUpAdvice) {
  Trace t = device_bound_loop();
  for (DeviceActivity& a : t.activities) a.correlation += 1000;
  const Report r = diagnose(t);
  EXPECT_EQ(r.coverage.unlinked_device, t.activities.size());
  EXPECT_TRUE(r.coverage.device_links_doubtful);
  EXPECT_FALSE(has(r, Advice::input_keeps_up)) << notes(r);
  EXPECT_NE(notes(r).find("link to no recorded CUDA call"), std::string::npos) << notes(r);
}

TEST(TraceDoubts, ZeroLengthKernelsAreCounted) {
  Trace t = device_bound_loop();
  for (std::size_t i = 0; i < 5; ++i) t.activities[i].end_ns = t.activities[i].begin_ns;
  const Report r = diagnose(t);
  EXPECT_EQ(r.coverage.zero_length_kernels, 5u);
  EXPECT_NE(notes(r).find("zero length"), std::string::npos) << notes(r);
}

TEST(TraceDoubts, RankClocksHoursApartAreSaidNotTrustedForStragglers) {
  CrossRankAccumulator acc;
  for (int rank = 0; rank < 2; ++rank) {
    RankSteps r;
    r.file = "r" + std::to_string(rank);
    r.rank = rank;
    r.world_size = 2;
    r.run_id = "abc";
    const std::int64_t skew = rank == 1 ? 3 * 3600 * 1000 * kMs : 0;  // three hours ahead
    for (int k = 0; k < 20; ++k) {
      RankSteps::Step s;
      s.step = k;
      s.window_ms = 10;
      s.arrive_ns = kBase + skew + k * 10 * kMs + (rank == 0 ? kMs : 0);
      r.steps.push_back(s);
    }
    ASSERT_TRUE(acc.add(r).is_ok());
  }
  const CrossRankReport out = acc.finish();
  EXPECT_TRUE(out.clocks_disagree);
  std::string all;
  for (const std::string& n : out.notes) all += n + "\n";
  EXPECT_NE(all.find("clocks disagree"), std::string::npos) << all;
}

}  // namespace
}  // namespace stalldx::diagnose
