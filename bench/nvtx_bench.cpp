// NVTX push/pop in a domain with no tool attached: what mirroring costs when Nsight is not running.
#include <benchmark/benchmark.h>
#include <nvtx3/nvToolsExt.h>

namespace {
void BM_NvtxPushPopNoTool(benchmark::State& state) {
  nvtxDomainHandle_t d = nvtxDomainCreateA("stalldx-bench");
  nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "bench");
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = s;
  for (auto _ : state) {
    nvtxDomainRangePushEx(d, &a);
    nvtxDomainRangePop(d);
  }
}
BENCHMARK(BM_NvtxPushPopNoTool);
}  // namespace
