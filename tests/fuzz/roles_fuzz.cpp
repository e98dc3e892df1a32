// libFuzzer: a roles file (--roles) and the names it is matched against, both untrusted. The input is
// the TOML text, a NUL byte, then names one per line (a name may be 30,000 characters: emit_nvtx's).
// Must never crash, hang (RE2: linear time, bounded memory) or leak.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "stalldx/record/role_map.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = in.find('\0');
  const std::string toml(in.substr(0, nul));
  std::string_view names = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);
  static const stalldx::record::RoleMap defaults = stalldx::record::RoleMap::defaults();
  stalldx::record::RoleMap user;
  const bool parsed = stalldx::record::RoleMap::parse(toml, "fuzz.toml", user).is_ok();
  while (!names.empty()) {
    const std::size_t nl = names.find('\n');
    const std::string_view name = names.substr(0, nl);
    const std::string_view domain = name.size() > 3 ? name.substr(0, 3) : std::string_view();
    (void)defaults.match(name, domain);
    if (parsed) (void)user.match(name, domain);
    if (nl == std::string_view::npos) break;
    names.remove_prefix(nl + 1);
  }
  return 0;
}
