// Internal: the CUPTI collector <stalldx/cuda.h> installs (the NVTX mirror is <stalldx/nvtx.h>).
#pragma once

#include <memory>

#include "stalldx/collector.h"

namespace stalldx::cuda {

std::unique_ptr<Collector> make_cupti_collector();

}  // namespace stalldx::cuda

namespace stalldx::cuda {
// A detach requested and not yet done is called off (cupti_detach.cpp): a collector about to start
// calls this first, so CUPTI is not finalized under it.
void cancel_cupti_detach();
}  // namespace stalldx::cuda
