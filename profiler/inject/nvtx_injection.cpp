// NVTX injection: the NVTX v3 headers compiled into any program load this library when
// NVTX_INJECTION64_PATH names it and call InitializeInjectionNvtx2, where we fill the core and domain
// function tables with handlers that record into this process's parts (part_writer.h). Needs no CUDA:
// a process that only emits NVTX (a loader worker) records too.
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "part_writer.h"

namespace stalldx::inject {
namespace {

std::string narrow(const wchar_t* w) {
  std::string s;
  if (w == nullptr) return s;
  for (; *w; ++w) s += (*w > 0 && *w < 128) ? static_cast<char>(*w) : '?';
  return s;
}

std::uint32_t message_name(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return name_id("");
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return name_id(a->message.ascii ? a->message.ascii : "");
    case NVTX_MESSAGE_TYPE_UNICODE: return name_id(narrow(a->message.unicode));
    case NVTX_MESSAGE_TYPE_REGISTERED: return static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(a->message.registered));
    default: return name_id("");
  }
}
std::uint32_t category(const nvtxEventAttributes_t* a) { return a ? a->category : 0; }
// An integer payload >= 0 (stalldx's convention: the batch the range works on), else -1.
std::int64_t payload(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return -1;
  switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_INT64: return a->payload.llValue >= 0 ? a->payload.llValue : -1;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
      return a->payload.ullValue <= static_cast<std::uint64_t>(INT64_MAX) ? static_cast<std::int64_t>(a->payload.ullValue) : -1;
    case NVTX_PAYLOAD_TYPE_INT32: return a->payload.iValue >= 0 ? a->payload.iValue : -1;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: return a->payload.uiValue;
    default: return -1;
  }
}
std::uint32_t domain_of(nvtxDomainHandle_t d) { return static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(d)); }

int NVTX_API range_push_a(const char* m) {
  push(name_id(m ? m : ""), 0, 0);
  return 0;
}
int NVTX_API range_push_w(const wchar_t* m) {
  push(name_id(narrow(m)), 0, 0);
  return 0;
}
int NVTX_API range_push_ex(const nvtxEventAttributes_t* a) {
  push(message_name(a), 0, category(a), payload(a));
  return 0;
}
int NVTX_API range_pop() { return pop() ? 0 : -1; }
nvtxRangeId_t NVTX_API range_start_a(const char* m) { return start(name_id(m ? m : ""), 0, 0); }
nvtxRangeId_t NVTX_API range_start_w(const wchar_t* m) { return start(name_id(narrow(m)), 0, 0); }
nvtxRangeId_t NVTX_API range_start_ex(const nvtxEventAttributes_t* a) { return start(message_name(a), 0, category(a), payload(a)); }
void NVTX_API range_end(nvtxRangeId_t id) { end(id); }
void NVTX_API name_os_thread_a(uint32_t tid, const char* name) { name_thread(tid, name ? name : ""); }
void NVTX_API name_os_thread_w(uint32_t tid, const wchar_t* name) { name_thread(tid, narrow(name)); }

int NVTX_API domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  push(message_name(a), domain_of(d), category(a), payload(a));
  return 0;
}
int NVTX_API domain_pop(nvtxDomainHandle_t) { return pop() ? 0 : -1; }
nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return start(message_name(a), domain_of(d), category(a), payload(a));
}
void NVTX_API domain_end(nvtxDomainHandle_t, nvtxRangeId_t id) { end(id); }
nvtxStringHandle_t NVTX_API register_string_a(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<std::uintptr_t>(name_id(s ? s : "")));
}
nvtxStringHandle_t NVTX_API register_string_w(nvtxDomainHandle_t, const wchar_t* s) {
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<std::uintptr_t>(name_id(narrow(s))));
}
nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(static_cast<std::uintptr_t>(domain_id(name ? name : "")));
}
nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(static_cast<std::uintptr_t>(domain_id(narrow(name))));
}
void NVTX_API domain_destroy(nvtxDomainHandle_t) {}

template <typename F>
void set(NvtxFunctionTable table, unsigned size, unsigned id, F f) {
  if (id < size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(f);
}

}  // namespace
}  // namespace stalldx::inject

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  using namespace stalldx::inject;
  if (!enabled()) return 0;  // no record directory: decline (NVTX calls stay no-ops)
  const auto* cb = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  if (cb == nullptr || cb->GetModuleFunctionTable == nullptr) return 0;
  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned n_core = 0, n_core2 = 0;
  if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &n_core) || core == nullptr) return 0;
  set(core, n_core, NVTX_CBID_CORE_RangePushA, &range_push_a);
  set(core, n_core, NVTX_CBID_CORE_RangePushW, &range_push_w);
  set(core, n_core, NVTX_CBID_CORE_RangePushEx, &range_push_ex);
  set(core, n_core, NVTX_CBID_CORE_RangePop, &range_pop);
  set(core, n_core, NVTX_CBID_CORE_RangeStartA, &range_start_a);
  set(core, n_core, NVTX_CBID_CORE_RangeStartW, &range_start_w);
  set(core, n_core, NVTX_CBID_CORE_RangeStartEx, &range_start_ex);
  set(core, n_core, NVTX_CBID_CORE_RangeEnd, &range_end);
  set(core, n_core, NVTX_CBID_CORE_NameOsThreadA, &name_os_thread_a);
  set(core, n_core, NVTX_CBID_CORE_NameOsThreadW, &name_os_thread_w);
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &n_core2) && core2 != nullptr) {
    set(core2, n_core2, NVTX_CBID_CORE2_DomainRangePushEx, &domain_push_ex);
    set(core2, n_core2, NVTX_CBID_CORE2_DomainRangePop, &domain_pop);
    set(core2, n_core2, NVTX_CBID_CORE2_DomainRangeStartEx, &domain_start_ex);
    set(core2, n_core2, NVTX_CBID_CORE2_DomainRangeEnd, &domain_end);
    set(core2, n_core2, NVTX_CBID_CORE2_DomainRegisterStringA, &register_string_a);
    set(core2, n_core2, NVTX_CBID_CORE2_DomainRegisterStringW, &register_string_w);
    set(core2, n_core2, NVTX_CBID_CORE2_DomainCreateA, &domain_create_a);
    set(core2, n_core2, NVTX_CBID_CORE2_DomainCreateW, &domain_create_w);
    set(core2, n_core2, NVTX_CBID_CORE2_DomainDestroy, &domain_destroy);
  }
  return 1;
}
