// Summaries in the style of key_averages().table() and `nsys stats`: grouped by name, count / total /
// mean / p95 / max; device busy as a union next to the plain sum; copy bandwidth by memory kind.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "summaries.h"
#include "stalldx/launched_within.h"
#include "stalldx/stats.h"

namespace stalldx::diagnose {

namespace {
struct Group {
  std::vector<double> durations;
  std::uint64_t bytes = 0;
};
std::vector<SummaryRow> finish(std::map<std::pair<std::string, std::string>, Group>& groups) {
  std::vector<SummaryRow> rows;
  for (auto& [key, g] : groups) {
    SummaryRow r;
    r.group = key.first;
    r.name = key.second;
    r.count = g.durations.size();
    std::sort(g.durations.begin(), g.durations.end());
    for (double d : g.durations) r.total_ms += d;
    r.mean_ms = r.count ? r.total_ms / static_cast<double>(r.count) : 0;
    r.p95_ms = percentile_sorted(g.durations, 95);
    r.max_ms = r.count ? g.durations.back() : 0;
    r.bytes = g.bytes;
    rows.push_back(std::move(r));
  }
  std::sort(rows.begin(), rows.end(), [](const SummaryRow& a, const SummaryRow& b) { return a.total_ms > b.total_ms; });
  return rows;
}
}  // namespace

void build_summaries(const Trace& t, const TraceIndex& ix, Report& rep) {
  std::map<std::pair<std::string, std::string>, Group> host, api, dev;
  for (const HostRange& r : t.ranges) {
    Group& g = host[{std::string(role_name(r.role)), t.name(r.name)}];
    g.durations.push_back(ms(r.end_ns - r.begin_ns));
    g.bytes += r.bytes;
  }
  for (const RuntimeCall& c : t.calls) api[{"cuda_api", t.name(c.name)}].durations.push_back(ms(c.end_ns - c.begin_ns));
  std::map<std::string, BandwidthRow> bw;
  for (const DeviceActivity& a : t.activities) {
    Group& g = dev[{activity_kind_name(a.kind), t.name(a.name)}];
    const double d = ms(a.end_ns - a.begin_ns);
    g.durations.push_back(d);
    g.bytes += a.bytes;
    rep.device_busy_sum_ms += is_device_work(a.kind) ? d : 0;
    if (is_memcpy(a.kind)) {
      const std::string key = fmt::format("{} {}", activity_kind_name(a.kind), mem_kind_name(a.host_mem));
      BandwidthRow& b = bw[key];
      b.kind = key;
      b.copies++;
      b.bytes += a.bytes;
      b.total_ms += d;
    }
  }
  rep.host_summary = finish(host);
  rep.api_summary = finish(api);
  rep.device_summary = finish(dev);
  for (auto& [k, b] : bw) {
    b.gbps = b.total_ms > 0 ? static_cast<double>(b.bytes) / (b.total_ms * 1e6) : 0;
    rep.bandwidth.push_back(b);
  }
  for (const Interval& i : ix.busy) rep.device_busy_union_ms += ms(i.end - i.begin);
  build_collective_summary(t, rep.collective);
}

void build_collective_summary(const Trace& t, CollectiveSummary& out) {
  out = CollectiveSummary{};
  std::vector<double> host, device;
  for (const HostRange& r : t.ranges)
    if (r.role == Role::collective) host.push_back(ms(r.end_ns - r.begin_ns));
  if (host.empty()) return;
  double bytes = 0;
  for (std::size_t i : activities_launched_within(t, Role::collective)) {
    const DeviceActivity& a = t.activities[i];
    if (!is_device_work(a.kind)) continue;
    device.push_back(ms(a.end_ns - a.begin_ns));
    bytes += static_cast<double>(a.bytes);
  }
  const auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double d : v) sum += d;
    return v.empty() ? 0 : sum / static_cast<double>(v.size());
  };
  std::sort(host.begin(), host.end());
  std::sort(device.begin(), device.end());
  out.ranges = host.size();
  out.host_mean_ms = mean(host);
  out.host_p95_ms = percentile_sorted(host, 95);
  out.device_records = device.size();
  out.device_mean_ms = mean(device);
  out.device_p95_ms = percentile_sorted(device, 95);
  out.device_bytes_per_range = bytes / static_cast<double>(out.ranges);
}

}  // namespace stalldx::diagnose
