// Bad-sample accounting: every unreadable or undecodable file is counted by kind and the first few are
// named, so nothing is lost silently. Recording takes a lock: bad samples are the rare path.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace stalldx::pipeline {

struct BadSampleReport {
  std::uint64_t total = 0;            // bad reads/decodes (a file seen twice counts twice)
  std::uint64_t unfilled = 0;         // samples left zero because no substitute decoded either
  std::map<std::string, std::uint64_t> by_kind;  // "read", "decode", "unsupported", "too_large"
  std::vector<std::string> first;     // "path: message", at most kMaxNamed
  static constexpr std::size_t kMaxNamed = 5;
};

class BadSampleLog {
 public:
  void add(const std::string& kind, const std::string& path, const std::string& message);
  void add_unfilled();
  BadSampleReport snapshot() const;

 private:
  mutable std::mutex mu_;
  BadSampleReport report_;
};

}  // namespace stalldx::pipeline
