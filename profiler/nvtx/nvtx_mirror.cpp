// NVTX mirror: each stalldx range becomes a push/pop in NVTX domain "stalldx", category = role, so an
// Nsight Systems capture shows the same phases. Strings are registered once per NameId.
#include <nvtx3/nvToolsExt.h>

#include <array>
#include <atomic>
#include <memory>

#include "stalldx/collector.h"
#include "stalldx/nvtx.h"
#include "stalldx/profiler.h"

namespace stalldx::nvtx {

namespace {
constexpr std::size_t kMaxNames = 4096;  // NameIds beyond this are pushed unregistered (ASCII, slower)

nvtxDomainHandle_t domain() {
  static nvtxDomainHandle_t d = [] {
    nvtxDomainHandle_t h = nvtxDomainCreateA("stalldx");
    for (int r = 0; r < kRoleCount; ++r) {
      const std::string name(role_name(static_cast<Role>(r)));
      nvtxDomainNameCategoryA(h, static_cast<std::uint32_t>(r + 1), name.c_str());
    }
    return h;
  }();
  return d;
}

std::array<std::atomic<nvtxStringHandle_t>, kMaxNames>& handles() {
  static std::array<std::atomic<nvtxStringHandle_t>, kMaxNames> h{};
  return h;
}

void push(NameId name, Role role, std::int64_t batch) noexcept {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = static_cast<std::uint32_t>(role) + 1;
  if (batch >= 0) {  // the batch this range works on, as `stalldx record` reads it
    a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    a.payload.llValue = batch;
  }
  if (name < kMaxNames) {
    nvtxStringHandle_t s = handles()[name].load(std::memory_order_acquire);
    if (s == nullptr) {  // first use of this name: register (racing registrations are harmless)
      s = nvtxDomainRegisterStringA(domain(), registered_name(name).c_str());
      handles()[name].store(s, std::memory_order_release);
    }
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = s;
  } else {
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "stalldx";
  }
  nvtxDomainRangePushEx(domain(), &a);
}

void pop() noexcept { nvtxDomainRangePop(domain()); }
}  // namespace

namespace {
class NvtxMirror final : public Collector {
 public:
  std::string_view name() const override { return "nvtx"; }
  Status start(const SessionOptions& options, RangeHooks& hooks, TraceMeta&) override {
    if (!options.nvtx) return Status::ok();
    (void)domain();
    hooks.range_push = &push;
    hooks.range_pop = &pop;
    return Status::ok();
  }
  void stop_and_drain(Trace&) override {}
};
}  // namespace

Status install_mirror(Session& session) { return session.add_collector(std::make_unique<NvtxMirror>()); }

}  // namespace stalldx::nvtx
