// A full recording seen as a sampled one would have been (sampling.h sampled_view).
#include <algorithm>
#include <unordered_set>

#include "stalldx/record/sampling.h"

namespace stalldx::record {

Trace sampled_view(const Trace& full, const SamplePlan& plan) {
  Trace t = full;
  std::vector<const HostRange*> steps;
  for (const HostRange& r : t.ranges)
    if (r.role == Role::step && r.step >= 0) steps.push_back(&r);
  std::sort(steps.begin(), steps.end(), [](const HostRange* a, const HostRange* b) { return a->begin_ns < b->begin_ns; });
  if (steps.empty()) return t;
  std::int64_t first = INT64_MAX, last = 0;
  for (const HostRange& r : t.ranges) first = std::min(first, r.begin_ns), last = std::max(last, r.end_ns);
  for (const RuntimeCall& c : t.calls) first = std::min(first, c.begin_ns), last = std::max(last, c.end_ns);
  for (const DeviceActivity& a : t.activities) first = std::min(first, a.begin_ns), last = std::max(last, a.end_ns);
  // The windows as the recorder opens them: at the begin of a recorded step after an unrecorded one
  // (or from the start), closed at the begin of the next unrecorded step.
  std::vector<DeviceWindow> windows;
  bool on = plan.records(-1);
  std::int64_t open = first;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const bool want = plan.records(static_cast<std::int64_t>(k));
    if (want && !on) open = steps[k]->begin_ns;
    else if (!want && on) windows.push_back({open, steps[k]->begin_ns, 1});
    on = want;
  }
  if (on) windows.push_back({open, last, 1});
  const auto inside = [&](std::int64_t ns) {
    auto it = std::upper_bound(windows.begin(), windows.end(), ns, [](std::int64_t v, const DeviceWindow& w) { return v < w.begin_ns; });
    return it != windows.begin() && ns < std::prev(it)->end_ns;
  };
  // A call made in a window is recorded, and with it the device work it launched, whenever that ran.
  std::unordered_set<std::uint64_t> kept;
  std::erase_if(t.calls, [&](const RuntimeCall& c) { return !inside(c.begin_ns); });
  for (const RuntimeCall& c : t.calls)
    if (c.correlation != 0) kept.insert(c.correlation);
  std::erase_if(t.activities, [&](const DeviceActivity& a) { return a.correlation != 0 ? !kept.count(a.correlation) : !inside(a.begin_ns); });
  set_device_windows(t.meta, plan, windows);
  return t;
}

}  // namespace stalldx::record
