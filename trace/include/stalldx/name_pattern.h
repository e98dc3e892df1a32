// A regular expression matched against untrusted names (range names, Kineto op names, file names):
// RE2, so matching is linear in the name's length with bounded memory — no catastrophic backtracking,
// no recursion that a 30,000-character name could overflow. Search semantics, as grep and Python's
// re.search: the pattern may match anywhere in the name unless it is anchored (^, $).
//
//   NamePattern p;
//   if (Status st = NamePattern::compile("^step", "--step", p); !st.is_ok()) return st;
//   p.found_in("step 12");  // true
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "stalldx/status.h"

namespace re2 {
class RE2;
}

namespace stalldx {

class NamePattern {
 public:
  NamePattern();
  ~NamePattern();
  NamePattern(NamePattern&&) noexcept;
  NamePattern& operator=(NamePattern&&) noexcept;
  NamePattern(const NamePattern& other);
  NamePattern& operator=(const NamePattern& other);

  // `origin` names where the pattern came from ("--step", "roles.toml:3") in the error. A pattern too
  // large for the engine's memory bound (deeply nested or repeated groups) is refused, not compiled.
  static Status compile(std::string_view pattern, std::string_view origin, NamePattern& out, bool case_insensitive = false);

  // True when the pattern occurs in `name` (false for an empty, never-compiled pattern).
  bool found_in(std::string_view name) const;
  const std::string& pattern() const { return pattern_; }
  bool empty() const { return re_ == nullptr; }

 private:
  std::string pattern_;
  bool case_insensitive_ = false;
  std::unique_ptr<re2::RE2> re_;
};

}  // namespace stalldx
