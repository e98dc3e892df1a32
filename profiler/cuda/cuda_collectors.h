// CUDA collectors for the stalldx profiler: NVTX mirroring of every range and CUPTI activity
// (runtime calls, kernels, copies, memsets, synchronization, overhead) on the host's clock, with the
// step id as CUPTI external correlation. The only code that includes CUPTI or NVTX headers.
#pragma once

#include "stalldx/hooks.h"

namespace stalldx::cuda {

// Installs the NVTX hooks and registers the CUPTI collector with the profiler core (idempotent).
// The next Session::start with cupti/nvtx on uses them. Call before the session starts.
void install_collectors();
// Removes them again (the session must be stopped).
void uninstall_collectors();

}  // namespace stalldx::cuda
