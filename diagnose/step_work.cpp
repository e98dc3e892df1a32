#include "step_work.h"

#include <algorithm>
#include <climits>

namespace stalldx::diagnose {

const std::vector<std::size_t>& StepWork::of(std::int64_t step) const {
  static const std::vector<std::size_t> none;
  const auto it = acts.find(step);
  return it == acts.end() ? none : it->second;
}

StepWork index_step_work(const Trace& t, const TraceIndex& ix) {
  StepWork w;
  std::int64_t span_begin = INT64_MAX, span_end = INT64_MIN;
  for (const HostRange* st : ix.steps) {
    if (st == nullptr) continue;
    span_begin = std::min(span_begin, st->begin_ns);
    span_end = std::max(span_end, st->end_ns);
  }
  for (std::size_t i = 0; i < t.activities.size(); ++i) {
    const DeviceActivity& a = t.activities[i];
    if (!is_device_work(a.kind)) continue;
    const std::int64_t s = ix.activity_step[i];
    if (s < 0) {
      if (a.begin_ns >= span_begin && a.begin_ns <= span_end) w.unmatched++;
      continue;
    }
    auto [it, fresh] = w.end_ns.emplace(s, a.end_ns);
    if (!fresh) it->second = std::max(it->second, a.end_ns);
    w.acts[s].push_back(i);
  }
  return w;
}

LaunchStats launch_stats(const Trace& t, const TraceIndex& ix, const StepWork& work, std::int64_t step) {
  LaunchStats l;
  const auto it = ix.launches_by_step.find(step);
  if (it == ix.launches_by_step.end()) return l;
  l.launches = it->second.count;
  l.host_us_per_launch = static_cast<double>(it->second.host_ns) / 1e3 / it->second.count;
  l.host_us_between_launches = static_cast<double>(it->second.last_ns - it->second.first_ns) / 1e3 / it->second.count;
  int kernels = 0;
  std::int64_t kernel_ns = 0;
  for (std::size_t i : work.of(step))
    if (t.activities[i].kind == ActivityKind::kernel) {
      ++kernels;
      kernel_ns += t.activities[i].end_ns - t.activities[i].begin_ns;
    }
  if (kernels > 0) l.device_us_per_kernel = static_cast<double>(kernel_ns) / 1e3 / kernels;
  return l;
}

int copies_in(const Trace& t, const StepWork& work, std::int64_t step) {
  int n = 0;
  for (std::size_t i : work.of(step)) n += is_memcpy(t.activities[i].kind) ? 1 : 0;
  return n;
}

}  // namespace stalldx::diagnose
