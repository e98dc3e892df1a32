// Name registry: NameId -> string, registered once per call site. One NameTable behind a lock.
#include <mutex>
#include <string>

#include "recorder.h"

namespace stalldx {
namespace {
struct Registry {
  std::mutex mu;
  NameTable names;
};
Registry& registry() {
  static Registry r;
  return r;
}
}  // namespace

NameId register_name(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.names.intern(name);
}

std::string registered_name(NameId id) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.names[id];
}

namespace detail {
NameTable name_table() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.names;
}
}  // namespace detail
}  // namespace stalldx
