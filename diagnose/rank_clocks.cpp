#include "rank_clocks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace stalldx::diagnose {

namespace {
std::int64_t median(std::vector<std::int64_t> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}
std::string seconds(std::int64_t ns) {
  const double s = static_cast<double>(ns) / 1e9;
  return std::llabs(ns) >= 10'000'000'000 ? fmt::format("{:.0f} s", s) : fmt::format("{:.3f} s", s);
}
}  // namespace

ClockEstimate RankClocks::align(const RankSteps& r) {
  ClockEstimate e;
  if (!have_reference_) {
    have_reference_ = true;
    reference_rank_ = r.rank;
    reference_base_ns_ = r.base_time_ns;
    for (const RankSteps::Step& s : r.steps)
      if (s.leave_ns >= 0) reference_ends_[s.step] = s.leave_ns;
    return e;
  }
  // Traces stamped from different base times (torch.profiler's baseTimeNanoseconds): that difference first.
  const std::int64_t base = r.base_time_ns != 0 && reference_base_ns_ != 0 ? r.base_time_ns - reference_base_ns_ : 0;
  std::vector<std::int64_t> diffs;
  for (const RankSteps::Step& s : r.steps) {
    if (s.leave_ns < 0) continue;
    if (auto it = reference_ends_.find(s.step); it != reference_ends_.end()) diffs.push_back(it->second - (s.leave_ns + base));
  }
  e.steps = static_cast<int>(diffs.size());
  e.shift_ns = base;
  if (diffs.size() < 3) {
    e.applied = base != 0;
    return e;
  }
  const std::int64_t m = median(diffs);
  std::vector<std::int64_t> dev;
  dev.reserve(diffs.size());
  for (std::int64_t d : diffs) dev.push_back(std::llabs(d - m));
  e.spread_ns = median(dev);
  if (std::llabs(m) <= kToleranceNs) {
    e.applied = base != 0;
    return e;
  }
  // The ends must agree on one offset more closely than the arrivals they will be compared by: a tenth
  // of the rank's median step (or the tolerance).
  std::vector<std::int64_t> windows;
  for (const RankSteps::Step& s : r.steps) windows.push_back(static_cast<std::int64_t>(s.window_ms * 1e6));
  const std::int64_t allowed = std::max(kToleranceNs, windows.empty() ? 0 : median(windows) / 10);
  if (e.spread_ns > allowed) {  // the ends do not agree on one offset: not a clock
    e.unreliable = true;
    notes_.push_back(fmt::format("rank {}'s collectives end {} from rank {}'s, but unevenly (spread {:.1f} ms over {} steps): its clock "
                                 "could not be aligned; its arrivals are compared as recorded",
                                 r.rank, seconds(m), reference_rank_, static_cast<double>(e.spread_ns) / 1e6, e.steps));
    return e;
  }
  e.shift_ns = base + m;
  e.applied = true;
  notes_.push_back(fmt::format("rank {}'s clock is {} {} rank {}'s (estimated from the ends of {} collectives, spread {:.2f} ms): aligned",
                               r.rank, seconds(std::llabs(m)), m > 0 ? "behind" : "ahead of", reference_rank_, e.steps,
                               static_cast<double>(e.spread_ns) / 1e6));
  return e;
}

}  // namespace stalldx::diagnose
