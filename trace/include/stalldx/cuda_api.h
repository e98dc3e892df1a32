// What a CUDA runtime or driver API call does, from its name as CUPTI and torch.profiler report it
// ("cudaLaunchKernel", "cuLaunchKernelEx", "cuMemAlloc_v2", "cudaStreamSynchronize"). The one reading of
// API names that the diagnosis switches on: it classifies each distinct name once, then switches on the
// kind, never on the text.
#pragma once

#include <cstdint>
#include <string_view>

namespace stalldx {

enum class ApiKind : std::uint8_t {
  launch,             // a kernel or graph launch (cudaLaunchKernel*, cuLaunchKernel*, cudaGraphLaunch, ...)
  synchronize,        // waits for the device: *Synchronize, cudaEventQuery / cuEventQuery
  host_allocation,    // allocates, frees, pins or unpins host memory (cudaHostAlloc, cuMemHostRegister, ...)
  device_allocation,  // allocates or frees device memory synchronously (cudaMalloc, cuMemFree_v2, ...; not the
                      // stream-ordered *Async ones)
  copy,               // cudaMemcpy*, cuMemcpy* (the diagnosis judges a copy by the device records it made)
  other,              // everything else
};

ApiKind api_kind(std::string_view name);

}  // namespace stalldx
