#include "step_buckets.h"

#include <algorithm>
#include <cmath>

namespace stalldx::diagnose {

std::vector<StepBucket> bucket_steps(const std::vector<StepDiagnosis>& steps, int max_buckets) {
  std::vector<StepBucket> out;
  if (steps.empty() || max_buckets <= 0) return out;
  const std::size_t n = steps.size();
  const std::size_t per = (n + static_cast<std::size_t>(max_buckets) - 1) / static_cast<std::size_t>(max_buckets);
  for (std::size_t i = 0; i < n; i += per) {
    StepBucket b;
    const std::size_t end = std::min(n, i + per);
    b.first_step = steps[i].step;
    b.last_step = steps[end - 1].step;
    for (std::size_t k = i; k < end; ++k) {
      const StepDiagnosis& s = steps[k];
      b.steps++;
      b.warmup = b.warmup || s.warmup;
      b.window_ms += s.window_ms;
      b.busy_ms += s.busy_ms;
      for (int c = 0; c < kClassCount; ++c) b.class_ms[static_cast<std::size_t>(c)] += s.class_ms[static_cast<std::size_t>(c)];
      const auto v = static_cast<std::size_t>(s.verdict);
      if (v < b.verdicts.size()) b.verdicts[v]++;
    }
    b.window_ms /= b.steps;
    b.busy_ms /= b.steps;
    for (double& c : b.class_ms) c /= b.steps;
    out.push_back(b);
  }
  return out;
}

void nice_axis(double max, double& top, double& tick) {
  if (!(max > 0)) max = 1;
  const double raw = max / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  tick = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  top = std::ceil(max / tick) * tick;
}

}  // namespace stalldx::diagnose
