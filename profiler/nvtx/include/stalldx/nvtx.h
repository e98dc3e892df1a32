// The NVTX mirror for a stalldx Session: every range also becomes a push/pop in NVTX domain "stalldx"
// (category = role + 1), so Nsight Systems or `stalldx record` sees the same phases. NVTX is
// header-only: this needs no CUDA. Built where CMake found the NVTX v3 headers.
//
//   stalldx::Session session;
//   stalldx::nvtx::install_mirror(session);   // before start; SessionOptions::nvtx turns it on or off
#pragma once

#include "stalldx/profiler.h"

namespace stalldx::nvtx {

Status install_mirror(Session& session);

}  // namespace stalldx::nvtx
