#include "stalldx/pipeline/bad_samples.h"

namespace stalldx::pipeline {

void BadSampleLog::add(const std::string& kind, const std::string& path, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  report_.total++;
  report_.by_kind[kind]++;
  if (report_.first.size() < BadSampleReport::kMaxNamed) report_.first.push_back(path + ": " + message);
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
