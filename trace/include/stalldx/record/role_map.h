// Range name (+ optional NVTX domain) -> stalldx role, for programs stalldx did not write: the ranges of
// `stalldx record` and of torch.profiler traces. Rules are tried in order; the first match wins; a name
// no rule matches stays a `user` range (shown, counted as unattributed, never a class).
//
// A user's rules (--roles FILE) are regular expressions with search semantics, like grep: `match =
// "load"` matches "load_image" and "preload"; anchors (^, $) when the user writes them. They are tried
// first. The built-in dictionary is matched against a name's word form (word_form below), so it is
// case-insensitive and indifferent to how words are joined: data_wait, DataWait, "data wait" and
// data-wait are one spelling. Matching is RE2 (linear time, bounded memory): names are untrusted text.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stalldx/name_pattern.h"
#include "stalldx/roles.h"
#include "stalldx/status.h"

namespace stalldx::record {

struct RoleRule {
  NamePattern pattern;
  std::string domain;      // empty = any domain
  Role role = Role::user;
  bool on_word_form = false;  // built-in rules: matched against word_form(name), not the name
};

// A name's words, lower case, each followed and preceded by '_': "DataLoader.__next__" ->
// "_data_loader_next_", "train_step[5]" -> "_train_step_5_", "h2d" -> "_h_2_d_", "HTTPServer" ->
// "_http_server_". Words split at non-alphanumerics, lower->upper case changes and letter/digit changes.
// Names over 256 characters have no word form ("": the built-in dictionary names short labels).
std::string word_form(std::string_view name);

class RoleMap {
 public:
  // The built-in rules: stalldx's own role names, PyTorch (ProfilerStep#N, DataLoader __next__,
  // Optimizer.step, copies and syncs), DALI, NCCL/MPI, and the words people name loop phases with.
  static RoleMap defaults();
  // Rules from a TOML file ([[role]] match = "...", role = "...", domain = "..."), tried before the
  // defaults. Errors name the file, the line and the offending value.
  static Status load(const std::string& path, RoleMap& out);
  static Status parse(const std::string& text, const std::string& origin, RoleMap& out);

  std::optional<Role> match(std::string_view name, std::string_view domain) const;
  const std::vector<RoleRule>& rules() const { return rules_; }

 private:
  std::vector<RoleRule> rules_;
};

}  // namespace stalldx::record
