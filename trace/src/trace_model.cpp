#include "stalldx/trace_model.h"

#include <array>
#include <string_view>

namespace stalldx {

namespace {
constexpr std::array<std::string_view, kRoleCount> kRoleNames = {
    "step", "wait_batch", "retrieval", "decode", "collate", "submit", "sync", "user", "collective", "compute"};
constexpr std::array<const char*, 9> kKindNames = {"kernel", "memcpy_h2d", "memcpy_d2h", "memcpy_d2d", "memcpy_other",
                                                   "memset", "sync", "overhead", "standin"};
constexpr std::array<const char*, 6> kMemNames = {"none", "pinned", "pageable", "device", "managed", "unknown"};
}  // namespace

std::string_view role_name(Role role) noexcept { return kRoleNames[static_cast<int>(role)]; }
std::optional<Role> role_from_name(std::string_view name) noexcept {
  for (int i = 0; i < kRoleCount; ++i)
    if (kRoleNames[i] == name) return static_cast<Role>(i);
  return std::nullopt;
}

const char* activity_kind_name(ActivityKind kind) noexcept { return kKindNames[static_cast<int>(kind)]; }
bool activity_kind_from_name(const std::string& s, ActivityKind& out) noexcept {
  for (std::size_t i = 0; i < kKindNames.size(); ++i)
    if (s == kKindNames[i]) { out = static_cast<ActivityKind>(i); return true; }
  return false;
}
const char* mem_kind_name(MemKind kind) noexcept { return kMemNames[static_cast<int>(kind)]; }
bool mem_kind_from_name(const std::string& s, MemKind& out) noexcept {
  for (std::size_t i = 0; i < kMemNames.size(); ++i)
    if (s == kMemNames[i]) { out = static_cast<MemKind>(i); return true; }
  return false;
}

}  // namespace stalldx
