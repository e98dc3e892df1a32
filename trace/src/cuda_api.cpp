// CUDA API names to kinds (cuda_api.h).
#include "stalldx/cuda_api.h"

#include <initializer_list>

namespace stalldx {

namespace {
// The name without its API prefix and its version or stream suffixes: "cuMemAlloc_v2" -> "MemAlloc",
// "cudaLaunchKernel_ptsz" -> "LaunchKernel", "cu64MemsetD8" -> "MemsetD8", "__cudaGetKernel" -> "GetKernel"
// (the runtime's internal entry points).
std::string_view stem(std::string_view name) {
  while (name.starts_with('_')) name.remove_prefix(1);
  for (std::string_view p : {"cuda", "cu64", "cu"})
    if (name.starts_with(p)) {
      name.remove_prefix(p.size());
      break;
    }
  if (const auto u = name.find('_'); u != std::string_view::npos) name = name.substr(0, u);
  return name;
}
bool is_one_of(std::string_view s, std::initializer_list<std::string_view> words) {
  for (std::string_view w : words)
    if (s == w) return true;
  return false;
}
bool starts_with_one_of(std::string_view s, std::initializer_list<std::string_view> words) {
  for (std::string_view w : words)
    if (s.starts_with(w)) return true;
  return false;
}
bool contains_one_of(std::string_view s, std::initializer_list<std::string_view> words) {
  for (std::string_view w : words)
    if (s.find(w) != std::string_view::npos) return true;
  return false;
}
}  // namespace

bool uses_cuda_graphs(std::string_view name) {
  if (!name.starts_with("cu") && !name.starts_with("__cu")) return false;
  const std::string_view s = stem(name);
  return s.starts_with("StreamBeginCapture") || (s.starts_with("Graph") && contains_one_of(s, {"Instantiate", "Launch", "Upload", "Exec"}));
}

ApiKind api_kind(std::string_view name) {
  if (!name.starts_with("cu") && !name.starts_with("__cu")) return ApiKind::other;  // NCCL, framework ops
  const std::string_view s = stem(name);
  if (contains_one_of(s, {"Get", "Peek", "IsCapturing", "Occupancy", "FuncSetAttribute", "FuncSetCacheConfig", "FuncSetSharedMemConfig"}))
    return ApiKind::state_query;
  if (s.starts_with("Graph")) return s == "GraphLaunch" ? ApiKind::launch : ApiKind::other;  // building a graph is not work
  if (s == "LaunchHostFunc") return ApiKind::host_function;
  if (s.starts_with("Launch")) return ApiKind::launch;
  if (s.starts_with("Memcpy")) return ApiKind::copy;
  if (s.starts_with("Memset")) return ApiKind::set;
  if (s == "StreamWaitEvent") return ApiKind::stream_wait;
  if (s == "StreamQuery") return ApiKind::poll;
  if (s.find("Synchronize") != std::string_view::npos || s == "EventQuery") return ApiKind::synchronize;
  if (is_one_of(s, {"HostAlloc", "MallocHost", "FreeHost", "HostRegister", "HostUnregister", "MemHostAlloc", "MemAllocHost", "MemFreeHost",
                    "MemHostRegister", "MemHostUnregister"}))
    return ApiKind::host_allocation;
  if (starts_with_one_of(s, {"Malloc", "Free", "MemAlloc", "MemFree"})) {
    if (s.find("Async") != std::string_view::npos) return ApiKind::ordered_allocation;
    if (is_one_of(s, {"MallocManaged", "MemAllocManaged"})) return ApiKind::managed_allocation;
    return ApiKind::device_allocation;
  }
  return ApiKind::other;
}

}  // namespace stalldx
