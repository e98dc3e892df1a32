// Internal: the NVTX mirror for stages without CUDA collectors (the host stand-in), so `--nvtx-only` and
// Nsight Systems see the ranges there too. nvtx_present.cpp or nvtx_absent.cpp, chosen by CMake.
#pragma once

#include "stalldx/profiler.h"

namespace stalldx::pipeline {

Status install_nvtx_mirror(Session& session);

}  // namespace stalldx::pipeline
