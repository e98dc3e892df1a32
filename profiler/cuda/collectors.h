// Internal: the two collectors <stalldx/cuda.h> installs.
#pragma once

#include <memory>

#include "stalldx/collector.h"

namespace stalldx::cuda {

std::unique_ptr<Collector> make_cupti_collector();
std::unique_ptr<Collector> make_nvtx_mirror();

}  // namespace stalldx::cuda
