// Which CUDA API calls get a CUPTI activity record (api_selection.h).
#include "api_selection.h"

#include "stalldx/cuda_api.h"

namespace stalldx::cuda {

// A call that only reads state. PyTorch makes thousands a step (H200, eager ResNet-50, 35 steps: 229,596
// cudaGetDevice, 75,856 cuDevicePrimaryCtxGetState, 23,072 cudaGetLastError, ... against 20,300 kernel
// launches). Without every_call these get no record. Read from CUPTI's own callback names through the
// project's one reading of API names (stalldx/cuda_api.h), once per id at start, never per call.
bool state_query(std::string_view name) { return api_kind(name) == ApiKind::state_query; }

namespace {
// Sets activity records on or off for every id of `domain` whose CUPTI callback name `selects`; the
// names are read once per id, at start. Returns how many ids were set.
std::size_t set_records(CUpti_CallbackDomain domain, bool (*selects)(std::string_view), bool on) {
  const bool driver = domain == CUPTI_CB_DOMAIN_DRIVER_API;
  const CUpti_CallbackId end = driver ? static_cast<CUpti_CallbackId>(CUPTI_DRIVER_TRACE_CBID_SIZE)
                                      : static_cast<CUpti_CallbackId>(CUPTI_RUNTIME_TRACE_CBID_SIZE);
  const std::uint8_t v = on ? 1 : 0;
  std::size_t n = 0;
  for (CUpti_CallbackId id = 1; id < end; ++id) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, id, &name) != CUPTI_SUCCESS || name == nullptr || !selects(name)) continue;
    n += (driver ? cuptiActivityEnableDriverApi(id, v) : cuptiActivityEnableRuntimeApi(id, v)) == CUPTI_SUCCESS;
  }
  return n;
}
}  // namespace

// Stops activity records for the state queries of one API domain (its kind already enabled: enabling
// the kind later would override this). (The other way round for the runtime API — its kind off, every
// other id turned on one by one — lost the runtime records kernels correlate to on the H200, gpu_test,
// 2026-12-03, and cost no less: this way is the one measured.)
std::size_t skip_state_queries(CUpti_CallbackDomain domain) { return set_records(domain, &state_query, false); }

bool work_call(std::string_view name) { return is_work(api_kind(name)); }

std::size_t record_work_calls(CUpti_CallbackDomain domain, bool on) { return set_records(domain, &work_call, on); }

std::vector<std::uint8_t> graph_call_ids(CUpti_CallbackDomain domain) {
  const CUpti_CallbackId end = domain == CUPTI_CB_DOMAIN_DRIVER_API ? static_cast<CUpti_CallbackId>(CUPTI_DRIVER_TRACE_CBID_SIZE)
                                                                    : static_cast<CUpti_CallbackId>(CUPTI_RUNTIME_TRACE_CBID_SIZE);
  std::vector<std::uint8_t> ids(end, 0);
  for (CUpti_CallbackId id = 1; id < end; ++id) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, id, &name) == CUPTI_SUCCESS && name != nullptr) ids[id] = uses_cuda_graphs(name) ? 1 : 0;
  }
  return ids;
}

}  // namespace stalldx::cuda
