// Which CUDA API calls get a CUPTI activity record: by default not those that only query state
// (cupti_collector.cpp; --cuda-every-call records them too), and of the driver API only the calls that
// put work on the device or wait for it.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace stalldx::cuda {

// True for a CUPTI callback name of a call that only reads state (cudaGetDevice, cuCtxGetCurrent, ...).
bool state_query(std::string_view name);
// Turns off activity records for the state queries of one API domain, whose activity kind is already
// enabled. Returns how many callback ids were turned off.
std::size_t skip_state_queries(CUpti_CallbackDomain domain);
// True for a runtime or driver API callback name of a call that launches, copies, sets, synchronizes,
// waits on or polls an event or stream, or allocates, frees, pins or unpins memory (cudaLaunchKernel,
// cuLaunchKernelEx, cuMemcpyAsync, cudaMalloc, cuMemHostUnregister, ...): stalldx::is_work(api_kind(name)).
bool work_call(std::string_view name);
// Turns activity records for one domain's work calls on (or back off) one by one, its activity kind
// left off: the other calls then pass without CUPTI's record keeping. Returns how many ids it set.
std::size_t record_work_calls(CUpti_CallbackDomain domain, bool on = true);
// For one API domain, indexed by callback id: 1 where the call means the program uses CUDA graphs
// (stalldx::uses_cuda_graphs of CUPTI's name for it), else 0. Read from CUPTI's names (no device needed).
std::vector<std::uint8_t> graph_call_ids(CUpti_CallbackDomain domain);

}  // namespace stalldx::cuda
