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

// Over every callback name this CUPTI knows (read without a device): a call is a state query or work or
// neither, never both; the waits, launches and copies PyTorch makes are all work.
TEST(CuptiSelection, EveryCallbackNameHasOneReading) {
  std::size_t names = 0, work = 0, queries = 0;
  for (CUpti_CallbackDomain domain : {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API}) {
    const CUpti_CallbackId end = domain == CUPTI_CB_DOMAIN_DRIVER_API ? static_cast<CUpti_CallbackId>(CUPTI_DRIVER_TRACE_CBID_SIZE)
                                                                      : static_cast<CUpti_CallbackId>(CUPTI_RUNTIME_TRACE_CBID_SIZE);
    for (CUpti_CallbackId id = 1; id < end; ++id) {
      const char* n = nullptr;
      if (cuptiGetCallbackName(domain, id, &n) != CUPTI_SUCCESS || n == nullptr) continue;
      ++names;
      const bool w = stalldx::cuda::work_call(n), q = stalldx::cuda::state_query(n);
      EXPECT_FALSE(w && q) << n;
      work += w;
      queries += q;
    }
  }
  EXPECT_GT(names, 500u);
  EXPECT_GT(work, 100u);
  EXPECT_GT(queries, 100u);
  for (const char* n : {"cudaLaunchKernel_v7000", "cuLaunchKernel", "cudaStreamSynchronize_v3020", "cudaMemcpyAsync_v3020", "cuMemHostUnregister"})
    EXPECT_TRUE(stalldx::cuda::work_call(n)) << n;
}

// The callback ids that mean a program uses CUDA graphs (record --sample then never finalizes CUPTI in
// it): found among CUPTI's own names, versioned as CUPTI spells them, and only those.
TEST(CuptiSelection, GraphCallsAreFoundByTheirCallbackIds) {
  const auto runtime = stalldx::cuda::graph_call_ids(CUPTI_CB_DOMAIN_RUNTIME_API);
  const auto driver = stalldx::cuda::graph_call_ids(CUPTI_CB_DOMAIN_DRIVER_API);
  for (CUpti_CallbackId id : {CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040,
                              CUPTI_RUNTIME_TRACE_CBID_cudaGraphUpload_v10000})
    EXPECT_EQ(runtime.at(id), 1) << id;
  for (CUpti_CallbackId id : {CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
                              CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2})
    EXPECT_EQ(driver.at(id), 1) << id;
  for (CUpti_CallbackId id : {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphCreate_v10000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020})
    EXPECT_EQ(runtime.at(id), 0) << id;
  EXPECT_EQ(driver.at(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel), 0);
  std::size_t marked = 0;
  for (auto v : runtime) marked += v;
  for (auto v : driver) marked += v;
  EXPECT_GT(marked, 20u);
  EXPECT_LT(marked, 200u);
}
