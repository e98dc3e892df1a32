// Internal: a DataLoader iterator made (or restarted) every step — `next(iter(loader))` in the loop —
// found from the batches the steps waited for (recommend.cpp advises on it and says so in those steps).
#pragma once

#include <set>

#include "stalldx/diagnose/diagnosis.h"
#include "trace_index.h"

namespace stalldx::diagnose {

struct IteratorRestarts {
  int steps = 0;                // steady steps looked at (after start-up)
  std::set<std::int64_t> fresh;  // of them, the steps whose first wait was for a pass's first batch
  int restarts = 0;             // of those, a persistent iterator's later pass (its workers were kept)
  double input_ms = 0;          // the fresh steps' input stall (retrieval + decoding: waits and worker start-up)
  double window_ms = 0;         // every looked-at step's window
  double median_window_ms = 0;  // the median looked-at step's window
  double new_iterator_excess_ms = 0;  // the steps that began a new iterator (pass 0): their windows over the median, summed
  double new_iterator_gap_ms = 0;     // the time outside any step just before those steps (the new iterator made there)
  int new_iterators = 0;              // those steps (not the first looked-at step: any loader starts once)
  std::set<std::int64_t> new_iterator_steps;  // their step numbers
  // Most steps (at least 3, at least half) began a pass: the loop makes its iterator each step.
  bool found() const { return fresh.size() >= 3 && 2 * static_cast<int>(fresh.size()) >= steps; }
  bool persistent() const { return 2 * restarts >= static_cast<int>(fresh.size()); }
  // Not every step, but new iterators (an epoch's, each starting its worker processes) cost at least
  // `share` of the steady window over what a median step takes.
  bool costly_epoch_starts(double share) const {
    return !found() && new_iterators >= 2 && window_ms > 0 && epoch_start_ms() >= share * (window_ms + new_iterator_gap_ms);
  }
  double epoch_start_ms() const { return new_iterator_excess_ms + new_iterator_gap_ms; }
};

// Over the steady steps of `rep` after the first `skip` (start-up). Batch ids as the Python hook writes
// them (part_format.h: iterator, pass, index in the pass); other sources' batch numbers never look fresh
// past batch 0.
IteratorRestarts find_iterator_restarts(const TraceIndex& ix, const Report& rep, int skip);

}  // namespace stalldx::diagnose
