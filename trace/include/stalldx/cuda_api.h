// What a CUDA runtime or driver API call does, from its name as CUPTI and torch.profiler report it
// ("cudaLaunchKernel", "cuLaunchKernelEx_ptsz", "cuMemAlloc_v2", "cudaStreamSynchronize"). The one
// reading of API names: the profiler chooses which calls get a CUPTI record by it, the diagnosis finds a
// call's cause by it, the torch.profiler reader its copies and syncs. Each reads a distinct name once,
// then switches on the kind, never on the text.
#pragma once

#include <cstdint>
#include <string_view>

namespace stalldx {

enum class ApiKind : std::uint8_t {
  launch,               // a kernel or graph launch (cudaLaunchKernel*, cuLaunchKernel*, cuLaunchGrid, cudaGraphLaunch, ...)
  host_function,        // a host function enqueued on a stream (cudaLaunchHostFunc)
  copy,                 // cudaMemcpy*, cuMemcpy*
  set,                  // cudaMemset*, cuMemsetD*
  stream_wait,          // a stream made to wait for an event (cudaStreamWaitEvent): enqueued, returns at once
  poll,                 // asks whether a stream's work is done (cudaStreamQuery)
  synchronize,          // waits for the device: *Synchronize; cudaEventQuery too (a loop polls it to wait)
  host_allocation,      // allocates, frees, pins or unpins host memory (cudaHostAlloc, cuMemHostRegister, ...)
  device_allocation,    // allocates or frees device memory synchronously (cudaMalloc, cuMemFree, cudaMallocArray, ...)
  ordered_allocation,   // stream-ordered allocation (cudaMallocAsync, cuMemFreeAsync, ...FromPoolAsync)
  managed_allocation,   // cudaMallocManaged, cuMemAllocManaged
  state_query,          // only reads or sets state (cudaGetDevice, cudaGetLastError, cuCtxGetCurrent, occupancy, ...)
  other,                // everything else (graph building, modules, events recorded, ...)
};

ApiKind api_kind(std::string_view name);

// A call that captures a CUDA graph or instantiates, updates, uploads or launches an executable one
// (cudaStreamBeginCapture, cudaGraphInstantiate, cuGraphLaunch, cudaGraphExecUpdate, ...): the program
// uses CUDA graphs. Building a graph node by node alone is not one.
bool uses_cuda_graphs(std::string_view name);

// A call that puts work on the device, waits for it or allocates: every kind but state_query and other.
constexpr bool is_work(ApiKind k) { return k != ApiKind::state_query && k != ApiKind::other; }

}  // namespace stalldx
