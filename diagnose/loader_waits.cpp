// Several DataLoaders advanced in every step (loader_waits.h).
#include "loader_waits.h"

#include <algorithm>
#include <map>
#include <set>

#include "stalldx/record/part_format.h"

namespace stalldx::diagnose {

double LoaderWaits::share(int place) const {
  double all = 0;
  for (const double w : wait_ms) all += w;
  return all > 0 ? wait_ms[static_cast<std::size_t>(place)] / all : 0;
}

int LoaderWaits::dominant(double at_least) const {
  for (std::size_t i = 0; i < wait_ms.size(); ++i)
    if (wait_ms[i] > 0 && share(static_cast<int>(i)) >= at_least) return static_cast<int>(i);
  return -1;
}

LoaderWaits find_loader_waits(const TraceIndex& ix, const Report& rep, int skip) {
  std::set<std::int64_t> looked_at;
  for (const StepDiagnosis& s : rep.steps) {
    if (s.warmup || skip-- > 0) continue;  // as evaluation_passes and iterator_restarts skip start-up
    looked_at.insert(s.step);
  }
  // Per step, its waits (put in time order below).
  std::map<std::int64_t, std::vector<const HostRange*>> waits;
  for (const HostRange* r : ix.consumer_ranges)
    if (r->role == Role::wait_batch && r->batch >= 0 && looked_at.count(r->step) > 0) waits[r->step].push_back(r);
  std::map<int, int> steps_by_count;  // distinct iterators waited on -> steps
  std::map<std::int64_t, std::vector<std::int64_t>> order;  // per step: its iterators, in first-wait order
  for (auto& [step, ws] : waits) {
    std::sort(ws.begin(), ws.end(), [](const HostRange* a, const HostRange* b) { return a->begin_ns < b->begin_ns; });
    std::vector<std::int64_t>& its = order[step];
    for (const HostRange* w : ws) {
      const std::int64_t it = w->batch >> record::kBatchIteratorShift;
      if (std::find(its.begin(), its.end(), it) == its.end()) its.push_back(it);
    }
    ++steps_by_count[static_cast<int>(its.size())];
  }
  LoaderWaits out;
  for (const auto& [count, steps] : steps_by_count)
    if (count >= 2 && 5 * steps >= 4 * static_cast<int>(looked_at.size())) out.loaders = count;
  if (out.loaders < 2) return out;
  out.wait_ms.assign(static_cast<std::size_t>(out.loaders), 0);
  for (const auto& [step, ws] : waits) {
    const std::vector<std::int64_t>& its = order[step];
    if (static_cast<int>(its.size()) != out.loaders) continue;
    for (const HostRange* w : ws) {
      const auto place = std::find(its.begin(), its.end(), w->batch >> record::kBatchIteratorShift) - its.begin();
      out.wait_ms[static_cast<std::size_t>(place)] += static_cast<double>(w->end_ns - w->begin_ns) / 1e6;
    }
  }
  return out;
}

}  // namespace stalldx::diagnose
