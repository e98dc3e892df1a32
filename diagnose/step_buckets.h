// Internal: steps grouped into at most N consecutive buckets for charts, so 10 and 10,000 steps both
// read well (one bar per step while they fit, then each bar the mean of its steps).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "stalldx/diagnose/diagnosis.h"

namespace stalldx::diagnose {

struct StepBucket {
  std::int64_t first_step = 0, last_step = 0;
  int steps = 0;
  bool warmup = false;                     // any warm-up step in it
  double window_ms = 0, busy_ms = 0;       // means over its steps
  std::array<double, kClassCount> class_ms{};
  std::array<int, 8> verdicts{};           // steps per Verdict value
};

std::vector<StepBucket> bucket_steps(const std::vector<StepDiagnosis>& steps, int max_buckets);

// A "nice" axis maximum and tick step (1, 2 or 5 × 10^k) covering `max`.
void nice_axis(double max, double& top, double& tick);

}  // namespace stalldx::diagnose
