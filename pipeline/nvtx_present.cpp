// Built where CMake found the NVTX headers.
#include "nvtx_mirror.h"
#include "stalldx/nvtx.h"

namespace stalldx::pipeline {

Status install_nvtx_mirror(Session& session) { return nvtx::install_mirror(session); }

}  // namespace stalldx::pipeline
