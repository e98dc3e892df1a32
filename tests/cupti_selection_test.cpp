// Which CUDA calls get a CUPTI activity record (profiler/cuda/api_selection): names only, no device.
#include <gtest/gtest.h>

#include "api_selection.h"

// Which CUDA calls get a CUPTI record (no device needed: names only).
TEST(CuptiSelection, WorkCallsAreLaunchesCopiesSetsWaitsAndAllocations) {
  for (const char* n : {"cudaLaunchKernel", "cuLaunchKernelEx", "cuLaunchKernel_ptsz", "cudaGraphLaunch", "cuGraphLaunch_ptsz", "cudaMemcpyAsync",
                        "cuMemcpyHtoDAsync_v2", "cu64MemsetD8", "cudaStreamSynchronize", "cuCtxSynchronize", "cudaEventSynchronize",
                        "cuStreamWaitEvent", "cudaEventQuery", "cudaMalloc", "cuMemAlloc_v2", "cudaFreeHost", "cudaHostRegister", "cudaMallocHost"})
    EXPECT_TRUE(stalldx::cuda::work_call(n)) << n;
  for (const char* n : {"cudaGetDevice", "cuDevicePrimaryCtxGetState", "cudaGetLastError", "cuGraphAddMemcpyNode", "cudaGraphAddMemsetNode",
                        "cuCtxGetCurrent", "cudaEventRecord", "cudaFuncGetAttributes", "cuModuleLoadData"})
    EXPECT_FALSE(stalldx::cuda::work_call(n)) << n;
  for (const char* n : {"cudaGetDevice", "cuDevicePrimaryCtxGetState", "cudaGetLastError", "cudaPeekAtLastError", "cudaStreamIsCapturing"})
    EXPECT_TRUE(stalldx::cuda::state_query(n)) << n;
  for (const char* n : {"cudaLaunchKernel", "cudaMemcpyAsync", "cudaStreamSynchronize"}) EXPECT_FALSE(stalldx::cuda::state_query(n)) << n;
}
