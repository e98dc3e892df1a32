// Internal: names and kinds as CUPTI gives them, turned into the trace's (cupti_collector.cpp).
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>

#include "stalldx/status.h"
#include "stalldx/trace_model.h"

namespace stalldx::cuda {

// A kernel's name demangled, without its parameter list; "?" for none.
std::string demangle(const char* name);
// "cudaMemcpyAsync" for cudaMemcpyAsync_v3020; "cu#N" / "cudart#N" when CUPTI has no name for the id.
std::string api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
// CUPTI's memory kind of a copy's host side.
MemKind mem_kind(std::uint8_t k);
// A CUPTI result: OK, or unavailable naming the CUPTI call `what` and CUPTI's own message.
Status cupti_status(CUptiResult r, const char* what);

}  // namespace stalldx::cuda
