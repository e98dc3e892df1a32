#include "cupti_names.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <memory>

namespace stalldx::cuda {

std::string demangle(const char* name) {
  if (name == nullptr) return "?";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  std::string s = status == 0 && d ? std::string(d.get()) : std::string(name);
  if (const auto p = s.find('('); p != std::string::npos && p > 0) s.resize(p);  // drop the parameter list
  return s;
}

std::string api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* n = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &n) != CUPTI_SUCCESS || n == nullptr)
    return fmt::format("{}#{}", domain == CUPTI_CB_DOMAIN_DRIVER_API ? "cu" : "cudart", cbid);
  std::string s(n);
  if (const auto p = s.rfind("_v"); p != std::string::npos && p + 2 < s.size() && std::isdigit(static_cast<unsigned char>(s[p + 2])))
    s.resize(p);  // cudaMemcpyAsync_v3020 -> cudaMemcpyAsync
  return s;
}

MemKind mem_kind(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return MemKind::pageable;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return MemKind::pinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return MemKind::device;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return MemKind::managed;
    default: return MemKind::unknown;
  }
}

Status cupti_status(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return Status::ok();
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  return Status::unavailable(fmt::format("CUPTI {} failed: {}", what, msg ? msg : "?"));
}

}  // namespace stalldx::cuda
