// Internal: a loop that advances several DataLoaders every step (`zip(labeled, unlabeled)`): which of
// them its waits were for, by the order the loop advanced them in each step — so "more workers" can say
// which loader's workers (recommend's advice on decoding).
#pragma once

#include <vector>

#include "stalldx/diagnose/diagnosis.h"
#include "trace_index.h"

namespace stalldx::diagnose {

struct LoaderWaits {
  int loaders = 0;              // DataLoaders advanced in (nearly) every looked-at step; 0 or 1: one loader
  std::vector<double> wait_ms;  // the loop's waits in those steps, by the loader's place in each step's order
  // The loader (0-based place) that took at least `share` of those waits, or -1.
  int dominant(double share) const;
  // The share of those waits that were for the loader at `place` (0 when there were none).
  double share(int place) const;
};

// Over the steady steps of `rep` after the first `skip` (start-up): the consumer's batch waits with batch
// ids as the Python hook writes them (part_format.h: the iterator field tells loaders apart). Found only
// when at least 4 in 5 of those steps waited on the same number (≥ 2) of distinct iterators.
LoaderWaits find_loader_waits(const TraceIndex& ix, const Report& rep, int skip);

}  // namespace stalldx::diagnose
