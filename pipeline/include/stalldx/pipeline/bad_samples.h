// Bad-sample accounting: every unreadable or undecodable file is counted by kind and the first few are
// named, so nothing is lost silently. Two figures that differ: the bad *attempts* (a bad file met twice
// counts twice) and the *images* that were affected (substituted by another file, or left zero).
// Recording takes a lock: bad samples are the rare path.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace stalldx::pipeline {

enum class BadKind : std::uint8_t { read, not_jpeg, corrupt, truncated, unsupported, too_large };
const char* bad_kind_name(BadKind kind);

struct BadSampleReport {
  std::uint64_t attempts = 0;         // bad reads/decodes met (a file met twice counts twice)
  std::uint64_t files = 0;            // distinct bad files met
  std::uint64_t substituted = 0;      // images whose file was bad, replaced by the next good file
  std::uint64_t unfilled = 0;         // images left zero because no substitute decoded either
  std::map<std::string, std::uint64_t> by_kind;  // attempts per bad_kind_name
  std::vector<std::string> first;     // "path: message", at most kMaxNamed
  static constexpr std::size_t kMaxNamed = 5;
  std::uint64_t images() const { return substituted + unfilled; }  // images not from their own file
};

class BadSampleLog {
 public:
  void add(BadKind kind, const std::string& path, const std::string& message);
  void add_substituted();
  void add_unfilled();
  BadSampleReport snapshot() const;

 private:
  mutable std::mutex mu_;
  BadSampleReport report_;
  std::set<std::string> paths_;
};

}  // namespace stalldx::pipeline
