// Internal: evaluation passes run inside training steps — a validation DataLoader iterated (the Python
// hook's iterations without a backward pass) between one training batch and the next — found from the
// hook's ranges and batch ids; recommend.cpp advises on them and says so in those steps.
#pragma once

#include <cstdint>
#include <set>

#include "stalldx/diagnose/diagnosis.h"
#include "trace_index.h"

namespace stalldx::diagnose {

struct EvaluationPasses {
  // Steady steps (after start-up) whose windows hold evaluation iterations: on the device's timeline a
  // pass run after a step's last launch falls in the next step's window (its idle time is that step's).
  std::set<std::int64_t> steps;
  int iterations = 0;            // those iterations
  double ms = 0;                 // their time: from each step's first evaluation iteration (or its loader's start) to its last's end
  double wait_ms = 0;            // of it, waits for the evaluation loaders' batches (the loop's wait ranges)
  double worker_start_ms = 0;    // of it, the evaluation loaders' iterators starting their worker processes
  int worker_starts = 0;         // how many times they did
  double window_ms = 0;          // every looked-at step's window
  int looked_at = 0;             // steps looked at
  // Worth a finding: evaluation takes at least `share` of the steady window.
  bool costly(double share) const { return !steps.empty() && window_ms > 0 && ms >= share * window_ms; }
  // The steps the headline and the advice on training's input leave out: those with a pass, while they
  // are at most kEvaluationSetAsideShare of the looked-at steps (a pass in most steps is the loop itself).
  std::set<std::int64_t> set_aside() const {
    return steps.size() <= kEvaluationSetAsideShare * looked_at ? steps : std::set<std::int64_t>{};
  }
  static constexpr double kEvaluationSetAsideShare = 0.25;
};

// Over the steady steps of `rep` after the first `skip` (start-up). Evaluation iterations are the hook's
// ranges named record::kPythonEvalIterationName on the loop's thread; their loaders are told apart from
// the training one by the iterator field of the batch ids (record::kBatchIteratorShift).
EvaluationPasses find_evaluation_passes(const Trace& t, const TraceIndex& ix, const Report& rep, int skip);

}  // namespace stalldx::diagnose
