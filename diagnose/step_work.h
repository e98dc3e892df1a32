// Each step's device work, as the diagnosis walks the steps: which activities a step owns (through the
// trace index's correlation links), when its last one ended, and the host's launch pace in it.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "stalldx/diagnose/diagnosis.h"
#include "trace_index.h"

namespace stalldx::diagnose {

struct StepWork {
  std::map<std::int64_t, std::vector<std::size_t>> acts;  // step -> its device-work activities (indices into t.activities)
  std::map<std::int64_t, std::int64_t> end_ns;            // step -> the end of its last activity
  std::uint64_t unmatched = 0;  // device work inside the steps' span that no step claims
  // The step's activities; empty when it has none.
  const std::vector<std::size_t>& of(std::int64_t step) const;
};

// Device work before the first step or after the last (start-up, model set-up, shutdown) is outside the
// steps, not a gap in the records: only work inside the steps' span and claimed by none is unmatched.
StepWork index_step_work(const Trace& t, const TraceIndex& ix);

// The consumer's kernel launches in `step` and the mean device time of its kernels (zeros: none).
LaunchStats launch_stats(const Trace& t, const TraceIndex& ix, const StepWork& work, std::int64_t step);

// Copies (any direction) among the step's device work.
int copies_in(const Trace& t, const StepWork& work, std::int64_t step);

}  // namespace stalldx::diagnose
