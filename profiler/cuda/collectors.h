// Internal: the CUPTI collector <stalldx/cuda.h> installs (the NVTX mirror is <stalldx/nvtx.h>).
#pragma once

#include <memory>

#include "stalldx/collector.h"

namespace stalldx::cuda {

std::unique_ptr<Collector> make_cupti_collector();

}  // namespace stalldx::cuda
