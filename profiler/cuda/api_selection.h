// Which CUDA API calls get a CUPTI activity record: by default not those that only query state
// (cupti_collector.cpp; --cuda-every-call records them too).
#pragma once

#include <cupti.h>

#include <cstddef>
#include <string_view>

namespace stalldx::cuda {

// True for a CUPTI callback name of a call that only reads state (cudaGetDevice, cuCtxGetCurrent, ...).
bool state_query(std::string_view name);
// Turns off activity records for the state queries of one API domain, whose activity kind is already
// enabled. Returns how many callback ids were turned off.
std::size_t skip_state_queries(CUpti_CallbackDomain domain);

}  // namespace stalldx::cuda
