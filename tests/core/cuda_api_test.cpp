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
  EXPECT_EQ(api_kind("__cudaLaunchKernel_ptsz"), ApiKind::launch);  // the runtime's internal entry point
  EXPECT_EQ(api_kind("cudaLaunchHostFunc"), ApiKind::host_function);  // runs a host function: no kernel
  for (const char* n : {"cudaGraphInstantiate", "cuGraphAddKernelNode", "cudaGraphAddMemcpyNode"})  // building a graph is not work
    EXPECT_EQ(api_kind(n), ApiKind::other) << n;
}

TEST(CudaApi, CallsThatMeanTheProgramUsesCudaGraphs) {
  for (const char* n : {"cudaStreamBeginCapture_v10000", "cuStreamBeginCapture_v2", "cudaStreamBeginCaptureToGraph_v12030", "cudaGraphInstantiate",
                        "cudaGraphInstantiateWithFlags_v11040", "cuGraphInstantiateWithParams", "cudaGraphLaunch", "cuGraphLaunch_ptsz",
                        "cudaGraphUpload", "cuGraphExecUpdate_v2", "cudaGraphExecKernelNodeSetParams"})
    EXPECT_TRUE(uses_cuda_graphs(n)) << n;
  for (const char* n : {"cudaGraphCreate", "cuGraphAddKernelNode", "cudaLaunchKernel", "cudaStreamSynchronize", "cudaStreamIsCapturing",
                        "ncclGraphLaunch", "cudaGetDevice"})
    EXPECT_FALSE(uses_cuda_graphs(n)) << n;
}

TEST(CudaApi, WaitsForTheDevice) {
  for (const char* n : {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cuStreamSynchronize",
                        "cuCtxSynchronize", "cudaStreamSynchronize_ptsz", "cudaEventQuery", "cuEventQuery"})
    EXPECT_EQ(api_kind(n), ApiKind::synchronize) << n;
  EXPECT_EQ(api_kind("cudaStreamWaitEvent"), ApiKind::stream_wait);  // enqueues a dependency, returns at once
  EXPECT_EQ(api_kind("cudaStreamQuery"), ApiKind::poll);
}

TEST(CudaApi, AllocationsHostAndDeviceButNotStreamOrdered) {
  for (const char* n : {"cudaHostAlloc", "cudaMallocHost", "cudaFreeHost", "cudaHostRegister", "cudaHostUnregister", "cuMemHostAlloc",
                        "cuMemAllocHost_v2", "cuMemFreeHost", "cuMemHostRegister_v2", "cuMemHostUnregister"})
    EXPECT_EQ(api_kind(n), ApiKind::host_allocation) << n;
  for (const char* n : {"cudaMalloc", "cudaFree", "cuMemAlloc_v2", "cuMemFree_v2", "cudaMallocPitch"})
    EXPECT_EQ(api_kind(n), ApiKind::device_allocation) << n;
  for (const char* n : {"cudaMallocAsync", "cudaFreeAsync", "cuMemAllocAsync_ptsz", "cuMemFreeAsync", "cudaMallocFromPoolAsync"})
    EXPECT_EQ(api_kind(n), ApiKind::ordered_allocation) << n;
  EXPECT_EQ(api_kind("cudaMallocManaged"), ApiKind::managed_allocation);
}

TEST(CudaApi, CopiesSetsStateQueriesAndTheRest) {
  for (const char* n : {"cudaMemcpyAsync", "cuMemcpyHtoDAsync_v2", "cudaMemcpy2DAsync", "cudaMemcpyToSymbol"})
    EXPECT_EQ(api_kind(n), ApiKind::copy) << n;
  for (const char* n : {"cudaMemsetAsync", "cu64MemsetD8", "cuMemsetD32Async_ptsz"}) EXPECT_EQ(api_kind(n), ApiKind::set) << n;
  for (const char* n : {"cudaGetDevice", "cudaGetLastError", "cudaPeekAtLastError", "cuDevicePrimaryCtxGetState", "cudaStreamIsCapturing",
                        "cudaOccupancyMaxActiveBlocksPerMultiprocessor", "cudaFuncSetAttribute", "__cudaGetKernel"})
    EXPECT_EQ(api_kind(n), ApiKind::state_query) << n;
  for (const char* n : {"cudaEventRecord", "cuModuleLoadData", "ncclAllReduce", "aten::add_", "", "Synchronize", "cu", "cuda", "__"})
    EXPECT_EQ(api_kind(n), ApiKind::other) << n;
  EXPECT_FALSE(is_work(ApiKind::state_query));
  EXPECT_FALSE(is_work(ApiKind::other));
  EXPECT_TRUE(is_work(ApiKind::set));
}

}  // namespace
}  // namespace stalldx
