// Internal: input that only a minority of steps wait for — bursts or spikes (recommend.cpp advises on it).
#pragma once

#include "stalldx/diagnose/diagnosis.h"
#include "trace_index.h"

namespace stalldx::diagnose {

// Input that a minority of steps wait for: a few steps wait long while the others find their batch ready.
// Two shapes look alike from the consumer: bursts (a loader whose workers each build a whole batch
// delivers them together; every batch is slow to make) and spikes (a few batches are slow to make). Where
// producers name their batch, the time to make the batches waited for against the others tells them apart.
struct UnevenInput {
  int waited = 0, ready = 0;
  double wait_ms = 0;          // input stall of the steps that waited
  double ready_window_ms = 0;  // windows of the steps that did not
  double waited_make_ms = -1, ready_make_ms = -1;  // mean first-begin-to-last-end of the batches' producers (-1 unknown)
  bool found = false;
  bool spikes() const { return waited_make_ms > 0 && ready_make_ms > 0 && waited_make_ms >= 2 * ready_make_ms; }
};

// A cause that is the loop waiting on input: reads, decodes, or a wait for a batch whose producers left
// no records. The one definition of "input stall" for the run's advice.
bool input_cause(Cause c);

// Over the steady steps of `rep` after the first `skip` (start-up): who waited for input, who found a
// batch ready, and (where producers name their batch) how long the batches of each took to make.
UnevenInput find_uneven_input(const TraceIndex& ix, const Report& rep, int skip = 0);

}  // namespace stalldx::diagnose
