#include "window_edges.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <unordered_set>

namespace stalldx::diagnose {

bool WindowEdges::on_device_timeline(const HostRange& sr, bool previous_on_device, std::int64_t previous_end, StepDiagnosis& sd) {
  if (!windows_.sampled()) return true;
  const std::ptrdiff_t w = windows_.window_of(sr);
  const bool first = w >= 0 && w != last_window_;
  last_window_ = w;
  if (w < 0) return false;
  sd.at_window_edge = true;  // until shown otherwise below
  if (first) {
    known_from_ = &sr == ix_.steps.front() ? sr.begin_ns : first_work_in_window(sr, w);
    if (&sr != ix_.steps.front()) {
      sd.details.push_back("a window's first step: the device may still have run work launched before the window (not recorded)");
      return false;
    }
  }
  const auto end = work_.end_ns.find(sr.step);
  const std::int64_t begin = previous_on_device ? previous_end : std::max(sr.begin_ns, known_from_);
  if (end == work_.end_ns.end() || end->second <= begin) {
    sd.details.push_back("inside a window but its device work was not recorded after its window begins (it ran after the window closed)");
    return false;
  }
  if (const int missing = launches_without_work(sr.step); missing > 0) {
    sd.details.push_back(fmt::format("inside a window but {} of its launches have no device work recorded (it ran after the window closed)",
                                     missing));
    return false;
  }
  sd.at_window_edge = false;
  return true;
}

// The consumer's launch calls in `step` whose work has no record: outermost calls only (a driver
// launch inside the runtime's launch call is the same launch, its work under the outer correlation).
int WindowEdges::launches_without_work(std::int64_t step) {
  if (!launches_indexed_) {
    launches_indexed_ = true;
    for (const RuntimeCall* c : ix_.consumer_calls)
      if (c->step >= 0 && ix_.kind(*c) == ApiKind::launch) launches_[c->step].push_back(c);
    for (auto& [s, v] : launches_) {
      std::sort(v.begin(), v.end(), [](const RuntimeCall* a, const RuntimeCall* b) {
        return a->begin_ns != b->begin_ns ? a->begin_ns < b->begin_ns : a->end_ns > b->end_ns;  // the outer call first
      });
      std::size_t kept = 0;
      for (const RuntimeCall* c : v)
        if (kept == 0 || c->begin_ns >= v[kept - 1]->end_ns) v[kept++] = c;  // one nested in the one before: dropped
      v.resize(kept);
    }
  }
  const auto it = launches_.find(step);
  if (it == launches_.end()) return 0;
  std::unordered_set<std::uint64_t> done;
  for (std::size_t a : work_.of(step)) done.insert(t_.activities[a].correlation);
  int missing = 0;
  for (const RuntimeCall* c : it->second) missing += done.count(c->correlation) == 0 ? 1 : 0;
  return missing;
}

// Where the window's device timeline is known from: on each stream, the first recorded work of the
// window's steps (from `sr` on; they come in order) begins after whatever ran unrecorded before it;
// the latest of those beginnings over the streams.
std::int64_t WindowEdges::first_work_in_window(const HostRange& sr, std::ptrdiff_t w) const {
  std::map<std::pair<std::int32_t, std::uint32_t>, std::int64_t> first;  // (device, stream) -> earliest begin
  auto it = std::find(ix_.steps.begin(), ix_.steps.end(), &sr);
  for (; it != ix_.steps.end() && windows_.window_of(**it) == w; ++it)
    for (std::size_t a : work_.of((*it)->step)) {
      const DeviceActivity& act = t_.activities[a];
      auto [at, fresh] = first.try_emplace({act.device, act.stream}, act.begin_ns);
      if (!fresh) at->second = std::min(at->second, act.begin_ns);
    }
  std::int64_t known = std::numeric_limits<std::int64_t>::min();
  for (const auto& [stream, begin] : first) known = std::max(known, begin);
  return first.empty() ? std::numeric_limits<std::int64_t>::max() : known;
}

}  // namespace stalldx::diagnose
