// Internal: how a consumer's wait for batch k splits between the producers' retrieval and decode work.
#pragma once

#include "trace_index.h"

namespace stalldx::diagnose {

// Share of a wait that producers spent in retrieval (vs decode) on `batch`, and their cpu/wall ratios.
struct InputSplit {
  double retrieval_fraction = 0;  // of the producer work overlapping the wait
  bool known = false;
  double read_cpu_ratio = -1, decode_cpu_ratio = -1;  // -1 = CPU time not sampled
  // Run-queue delay / wall of the same ranges (runnable, not running: the host denied them a CPU);
  // -1 = not sampled (older traces, kernels without schedstat).
  double read_runq_ratio = -1, decode_runq_ratio = -1;
  double read_ms = 0, decode_ms = 0;                  // overlap with the wait, summed over workers
};
InputSplit split_wait(const TraceIndex& ix, const HostRange& wait);

}  // namespace stalldx::diagnose
