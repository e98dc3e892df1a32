#include "stalldx/pipeline/bad_samples.h"

#include <array>

namespace stalldx::pipeline {

const char* bad_kind_name(BadKind kind) {
  static constexpr std::array<const char*, 6> kNames = {"read", "not_jpeg", "corrupt", "truncated", "unsupported", "too_large"};
  return kNames[static_cast<std::size_t>(kind)];
}

void BadSampleLog::add(BadKind kind, const std::string& path, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  report_.attempts++;
  report_.by_kind[bad_kind_name(kind)]++;
  if (paths_.insert(path).second) report_.files++;
  if (report_.first.size() < BadSampleReport::kMaxNamed) report_.first.push_back(path + ": " + message);
}

void BadSampleLog::add_substituted() {
  std::lock_guard<std::mutex> lock(mu_);
  report_.substituted++;
}

void BadSampleLog::add_unfilled() {
  std::lock_guard<std::mutex> lock(mu_);
  report_.unfilled++;
}

BadSampleReport BadSampleLog::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return report_;
}

}  // namespace stalldx::pipeline
