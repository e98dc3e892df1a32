// CUDA API names to kinds: runtime and driver spellings, version and per-thread-stream suffixes, and the
// calls that look alike but do something else (stream-ordered allocation, host functions, memsets).
#include <gtest/gtest.h>

#include "stalldx/cuda_api.h"

namespace stalldx {
namespace {

TEST(CudaApi, LaunchesInEverySpelling) {
  for (const char* n : {"cudaLaunchKernel", "cudaLaunchKernel_ptsz", "cudaLaunchKernelExC_v11060", "cuLaunchKernel", "cuLaunchKernelEx",
                        "cudaLaunchCooperativeKernel", "cudaGraphLaunch", "cuGraphLaunch", "cudaLaunchDevice"})
    EXPECT_EQ(api_kind(n), ApiKind::launch) << n;
  EXPECT_EQ(api_kind("cudaLaunchHostFunc"), ApiKind::other);  // runs a host function: no kernel
  EXPECT_EQ(api_kind("cudaGraphInstantiate"), ApiKind::other);
}

TEST(CudaApi, WaitsForTheDevice) {
  for (const char* n : {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cuStreamSynchronize",
                        "cuCtxSynchronize", "cudaStreamSynchronize_ptsz", "cudaEventQuery", "cuEventQuery"})
    EXPECT_EQ(api_kind(n), ApiKind::synchronize) << n;
  EXPECT_EQ(api_kind("cudaStreamWaitEvent"), ApiKind::other);  // enqueues a dependency, returns at once
}

TEST(CudaApi, AllocationsHostAndDeviceButNotStreamOrdered) {
  for (const char* n : {"cudaHostAlloc", "cudaMallocHost", "cudaFreeHost", "cudaHostRegister", "cudaHostUnregister", "cuMemHostAlloc",
                        "cuMemAllocHost_v2", "cuMemFreeHost", "cuMemHostRegister_v2", "cuMemHostUnregister"})
    EXPECT_EQ(api_kind(n), ApiKind::host_allocation) << n;
  for (const char* n : {"cudaMalloc", "cudaFree", "cuMemAlloc_v2", "cuMemFree_v2", "cudaMallocPitch"})
    EXPECT_EQ(api_kind(n), ApiKind::device_allocation) << n;
  for (const char* n : {"cudaMallocAsync", "cudaFreeAsync", "cuMemAllocAsync", "cuMemFreeAsync", "cudaMallocManaged"})
    EXPECT_EQ(api_kind(n), ApiKind::other) << n;
}

TEST(CudaApi, CopiesQueriesAndOtherNamesAreOther) {
  for (const char* n : {"cudaMemcpyAsync", "cuMemcpyHtoDAsync_v2", "cudaMemcpy2DAsync", "cudaMemcpyToSymbol"})
    EXPECT_EQ(api_kind(n), ApiKind::copy) << n;
  for (const char* n : {"cudaMemsetAsync", "cudaGetDevice", "cudaGetLastError", "cuDevicePrimaryCtxGetState",
                        "ncclAllReduce", "aten::add_", "", "Synchronize", "cu", "cuda"})
    EXPECT_EQ(api_kind(n), ApiKind::other) << n;
}

}  // namespace
}  // namespace stalldx
