#include "stalldx/launched_within.h"

#include <algorithm>
#include <unordered_set>

namespace stalldx {

std::vector<std::size_t> activities_launched_within(const Trace& t, Role role) {
  // The role's ranges per thread, by begin: a call's enclosing range is the last one beginning at or
  // before it (ranges of one role on one thread nest or follow each other; the outermost begins first).
  std::vector<std::vector<const HostRange*>> by_thread;
  for (const HostRange& r : t.ranges) {
    if (r.role != role) continue;
    if (r.thread >= by_thread.size()) by_thread.resize(r.thread + 1);
    by_thread[r.thread].push_back(&r);
  }
  std::vector<std::size_t> out;
  if (by_thread.empty()) return out;
  for (auto& v : by_thread)
    std::sort(v.begin(), v.end(), [](const HostRange* a, const HostRange* b) { return a->begin_ns < b->begin_ns; });
  std::unordered_set<std::uint64_t> launched;
  for (const RuntimeCall& c : t.calls) {
    if (c.correlation == 0 || c.thread >= by_thread.size()) continue;
    const auto& v = by_thread[c.thread];
    auto it = std::upper_bound(v.begin(), v.end(), c.begin_ns, [](std::int64_t ts, const HostRange* r) { return ts < r->begin_ns; });
    // Ranges beginning before the call, latest first; the first that still holds it encloses it.
    bool inside = false;
    for (auto k = it; k != v.begin() && !inside;) {
      --k;
      inside = (*k)->end_ns >= c.begin_ns;
      if (it - k > 8) break;  // nesting deeper than this within one role does not happen
    }
    if (inside) launched.insert(c.correlation);
  }
  for (std::size_t i = 0; i < t.activities.size(); ++i)
    if (t.activities[i].correlation != 0 && launched.count(t.activities[i].correlation)) out.push_back(i);
  return out;
}

}  // namespace stalldx
