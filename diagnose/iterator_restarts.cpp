// A DataLoader iterator made every step (iterator_restarts.h).
#include "iterator_restarts.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "stalldx/record/part_format.h"
#include "stalldx/stats.h"

namespace stalldx::diagnose {

IteratorRestarts find_iterator_restarts(const TraceIndex& ix, const Report& rep, int skip) {
  std::map<std::int64_t, std::int64_t> first_wait;  // step -> the batch it waited for first
  for (const HostRange* r : ix.consumer_ranges)
    if (r->role == Role::wait_batch && r->step >= 0 && r->batch >= 0) first_wait.try_emplace(r->step, r->batch);
  const std::int64_t index_mask = (std::int64_t{1} << record::kBatchPassShift) - 1;
  IteratorRestarts out;
  std::vector<double> windows;
  std::vector<double> new_iterator_windows;
  const StepDiagnosis* previous = nullptr;
  for (const StepDiagnosis& s : rep.steps) {
    const StepDiagnosis* before = std::exchange(previous, &s);
    if (s.warmup || skip-- > 0) continue;
    ++out.steps;
    out.window_ms += s.window_ms;
    windows.push_back(s.window_ms);
    const auto it = first_wait.find(s.step);
    if (it == first_wait.end() || (it->second & index_mask) != 0) continue;
    out.fresh.insert(s.step);
    const bool restart = (it->second >> record::kBatchPassShift & 0xFFFF) > 0;
    out.restarts += restart ? 1 : 0;
    if (!restart && out.steps > 1) {  // the run's first iterator starts its workers with persistent ones too
      new_iterator_windows.push_back(s.window_ms);
      out.new_iterator_steps.insert(s.step);
      if (before != nullptr && before->step + 1 == s.step)
        out.new_iterator_gap_ms += std::max(0.0, s.window_begin_ms - before->window_end_ms);
    }
    out.input_ms += s.class_ms[static_cast<std::size_t>(StallClass::retrieval)] + s.class_ms[static_cast<std::size_t>(StallClass::decoding)];
  }
  if (windows.empty()) return out;
  out.median_window_ms = percentile(std::move(windows), 50);
  out.new_iterators = static_cast<int>(new_iterator_windows.size());
  for (double w : new_iterator_windows) out.new_iterator_excess_ms += std::max(0.0, w - out.median_window_ms);
  return out;
}

}  // namespace stalldx::diagnose
