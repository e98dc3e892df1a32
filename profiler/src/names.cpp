// Name registry: NameId -> string, registered once per call site.
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "recorder.h"
#include "stalldx/hooks.h"

namespace stalldx {
namespace {
struct Registry {
  std::mutex mu;
  std::vector<std::string> names;
  std::unordered_map<std::string, NameId> ids;
};
Registry& registry() {
  static Registry r;
  return r;
}
}  // namespace

NameId register_name(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::string key(name);
  auto it = r.ids.find(key);
  if (it != r.ids.end()) return it->second;
  const NameId id = static_cast<NameId>(r.names.size());
  r.names.push_back(key);
  r.ids.emplace(std::move(key), id);
  return id;
}

std::string registered_name(NameId id) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return id < r.names.size() ? r.names[id] : std::string("?");
}

namespace detail {
std::vector<std::string> name_table() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.names;
}
}  // namespace detail
}  // namespace stalldx
