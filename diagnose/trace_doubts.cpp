#include "trace_doubts.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <tuple>
#include <unordered_set>
#include <vector>

namespace stalldx::diagnose {

namespace {

constexpr std::uint64_t kDayNs = 86'400ull * 1'000'000'000ull;

// |a - b| without overflow, for any two int64 values.
std::uint64_t distance(std::int64_t a, std::int64_t b) {
  return a > b ? static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b) : static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(a);
}

template <class E>
bool absurd(const E& e, std::int64_t median) {
  return e.end_ns < e.begin_ns || distance(e.end_ns, e.begin_ns) > kDayNs || distance(e.begin_ns, median) > kDayNs;
}

// Every field, for sorting equal events next to each other.
auto key(const HostRange& r) {
  return std::tie(r.begin_ns, r.end_ns, r.name, r.thread, r.role, r.step, r.batch, r.sample, r.cpu_ns, r.runq_ns, r.bytes);
}
auto key(const RuntimeCall& c) { return std::tie(c.begin_ns, c.end_ns, c.name, c.thread, c.correlation, c.step); }
auto key(const DeviceActivity& a) {
  return std::tie(a.begin_ns, a.end_ns, a.name, a.device, a.stream, a.kind, a.bytes, a.host_mem, a.correlation, a.step);
}

// Marks in `drop` the absurd events of `v` and those equal to an earlier kept one.
template <class E>
void mark(const std::vector<E>& v, std::int64_t median, std::vector<char>& drop, TraceDoubts& d) {
  drop.assign(v.size(), 0);
  std::vector<std::size_t> order;
  order.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (absurd(v[i], median)) {
      drop[i] = 1;
      d.absurd++;
    } else {
      order.push_back(i);
    }
  }
  // Equal events are adjacent once sorted by all their fields; the first (in trace order) is kept.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(v[a]) < key(v[b]); });
  for (std::size_t i = 1; i < order.size(); ++i)
    if (v[order[i]] == v[order[i - 1]]) {
      drop[order[i]] = 1;
      d.repeated++;
    }
}

template <class E>
void keep(const std::vector<E>& v, const std::vector<char>& drop, std::vector<E>& out) {
  out.clear();
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!drop[i]) out.push_back(v[i]);
}

}  // namespace

bool check_trace(const Trace& t, TraceDoubts& d, Trace& cleaned) {
  d = TraceDoubts{};
  std::vector<std::int64_t> begins;
  begins.reserve(t.ranges.size() + t.calls.size() + t.activities.size());
  for (const HostRange& r : t.ranges) begins.push_back(r.begin_ns);
  for (const RuntimeCall& c : t.calls) begins.push_back(c.begin_ns);
  for (const DeviceActivity& a : t.activities) begins.push_back(a.begin_ns);
  std::int64_t median = 0;
  if (!begins.empty()) {
    std::nth_element(begins.begin(), begins.begin() + static_cast<std::ptrdiff_t>(begins.size() / 2), begins.end());
    median = begins[begins.size() / 2];
  }
  std::vector<char> drop_ranges, drop_calls, drop_acts;
  mark(t.ranges, median, drop_ranges, d);
  mark(t.calls, median, drop_calls, d);
  mark(t.activities, median, drop_acts, d);

  std::unordered_set<std::uint64_t> correlations;
  correlations.reserve(t.calls.size());
  for (std::size_t i = 0; i < t.calls.size(); ++i)
    if (!drop_calls[i] && t.calls[i].correlation != 0 && !correlations.insert(t.calls[i].correlation).second) d.duplicate_correlations++;
  for (std::size_t i = 0; i < t.activities.size(); ++i) {
    const DeviceActivity& a = t.activities[i];
    if (drop_acts[i] || !is_device_work(a.kind) || a.device < 0) continue;
    d.device_work++;
    if (!correlations.empty() && a.correlation != 0 && !correlations.count(a.correlation)) d.unlinked_device++;
    if (a.kind == ActivityKind::kernel && a.end_ns == a.begin_ns) d.zero_length_kernels++;
  }
  if (d.absurd + d.repeated == 0) return false;
  cleaned.meta = t.meta;
  cleaned.threads = t.threads;
  cleaned.names = t.names;
  cleaned.counters = t.counters;
  keep(t.ranges, drop_ranges, cleaned.ranges);
  keep(t.calls, drop_calls, cleaned.calls);
  keep(t.activities, drop_acts, cleaned.activities);
  return true;
}

void note_doubts(const TraceDoubts& d, Coverage& cov, std::vector<std::string>& lowered) {
  cov.absurd_events = d.absurd;
  cov.repeated_events = d.repeated;
  cov.duplicate_correlations = d.duplicate_correlations;
  cov.unlinked_device = d.unlinked_device;
  cov.zero_length_kernels = d.zero_length_kernels;
  cov.device_links_doubtful = d.links_doubtful();
  if (d.absurd) {
    cov.notes.push_back(fmt::format("{} events with impossible times (end before begin, over a day long, or a day away from the rest) "
                                    "were set aside", d.absurd));
    lowered.push_back(fmt::format("{} events with impossible times", d.absurd));
  }
  if (d.repeated) {
    cov.notes.push_back(fmt::format("{} events repeated an earlier one exactly (a trace merged twice?): counted once", d.repeated));
    lowered.push_back(fmt::format("{} repeated events", d.repeated));
  }
  if (d.duplicate_correlations) {
    cov.notes.push_back(fmt::format("{} CUDA calls reuse an earlier call's correlation id: the step of their device work is a guess",
                                    d.duplicate_correlations));
    lowered.push_back(fmt::format("{} duplicate correlation ids", d.duplicate_correlations));
  }
  if (d.unlinked_device) {
    cov.notes.push_back(fmt::format("{} of {} device records link to no recorded CUDA call{}", d.unlinked_device, d.device_work,
                                    d.links_doubtful() ? ": whether the input keeps up is not said" : ""));
    if (d.links_doubtful()) lowered.push_back(fmt::format("{} of {} device records link to no call", d.unlinked_device, d.device_work));
  }
  if (d.zero_length_kernels)
    cov.notes.push_back(fmt::format("{} kernels have zero length (they add no busy time)", d.zero_length_kernels));
}

}  // namespace stalldx::diagnose
