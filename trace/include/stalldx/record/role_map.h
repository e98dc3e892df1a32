// Range name (+ optional NVTX domain) -> stalldx role, for programs stalldx did not write: the ranges of
// `stalldx record` and of torch.profiler traces. Rules are tried in order; the first match wins; a name
// no rule matches stays a `user` range (shown, counted as unattributed, never a class).
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "stalldx/roles.h"
#include "stalldx/status.h"

namespace stalldx::record {

struct RoleRule {
  std::string pattern;  // ECMAScript regex, matched against the whole name
  std::string domain;   // empty = any domain
  Role role = Role::user;
  std::regex re;
};

class RoleMap {
 public:
  // The built-in rules: stalldx's own role names, PyTorch (ProfilerStep#N, DataLoader __next__,
  // Optimizer.step, copies and syncs), DALI, the seed's data_load, common loop annotations.
  static RoleMap defaults();
  // Rules from a TOML file ([[role]] match = "...", role = "...", domain = "..."), tried before the
  // defaults. Errors name the file, the line and the offending value.
  static Status load(const std::string& path, RoleMap& out);
  static Status parse(const std::string& text, const std::string& origin, RoleMap& out);

  std::optional<Role> match(const std::string& name, const std::string& domain) const;
  const std::vector<RoleRule>& rules() const { return rules_; }

 private:
  std::vector<RoleRule> rules_;
};

}  // namespace stalldx::record
