// Device work that is a collective by its kernel's name: NCCL's kernels (`ncclDevKernel_AllReduce_Sum_f32_RING_LL`,
// older `ncclKernel_AllReduce_RING_LL_Sum_float`), demangled or not. Read where no host range marked the
// call that launched them (DDP's reducer, FSDP), so a rank's arrival at the collective is still known.
#pragma once

#include <string_view>

namespace stalldx {

inline bool is_collective_kernel(std::string_view kernel_name) noexcept {
  return kernel_name.find("ncclDevKernel_") != std::string_view::npos || kernel_name.find("ncclKernel_") != std::string_view::npos;
}

}  // namespace stalldx
