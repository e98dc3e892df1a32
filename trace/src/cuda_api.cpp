// CUDA API names to kinds (cuda_api.h).
#include "stalldx/cuda_api.h"

namespace stalldx {

namespace {
// The name without its API prefix and its version or stream suffixes: "cuMemAlloc_v2" -> "MemAlloc",
// "cudaLaunchKernel_ptsz" -> "LaunchKernel".
std::string_view stem(std::string_view name) {
  for (std::string_view p : {"cuda", "cu"})
    if (name.starts_with(p)) {
      name.remove_prefix(p.size());
      break;
    }
  if (const auto u = name.find('_'); u != std::string_view::npos) name = name.substr(0, u);
  return name;
}
bool any_of(std::string_view s, std::initializer_list<std::string_view> words) {
  for (std::string_view w : words)
    if (s == w) return true;
  return false;
}
}  // namespace

ApiKind api_kind(std::string_view name) {
  if (!name.starts_with("cu")) return ApiKind::other;
  const std::string_view s = stem(name);
  if (s.starts_with("LaunchKernel") || s.starts_with("LaunchCooperativeKernel") || s == "GraphLaunch" || s == "LaunchDevice")
    return ApiKind::launch;
  if (s.find("Synchronize") != std::string_view::npos || s == "EventQuery") return ApiKind::synchronize;
  if (any_of(s, {"HostAlloc", "MallocHost", "FreeHost", "HostRegister", "HostUnregister", "MemHostAlloc", "MemAllocHost",
                 "MemFreeHost", "MemHostRegister", "MemHostUnregister"}))
    return ApiKind::host_allocation;
  if (any_of(s, {"Malloc", "Free", "MallocPitch", "Malloc3D", "MallocArray", "MemAlloc", "MemFree", "MemAllocPitch"}))
    return ApiKind::device_allocation;
  if (s.starts_with("Memcpy")) return ApiKind::copy;
  return ApiKind::other;
}

}  // namespace stalldx
