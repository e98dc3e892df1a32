// Start-up counted as steady state (startup_steps.h).
#include "startup_steps.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace stalldx::diagnose {

StartupSteps find_startup_steps(const Report& rep) {
  std::vector<double> windows;
  for (const StepDiagnosis& s : rep.steps)
    if (!s.warmup) windows.push_back(s.window_ms);
  StartupSteps out;
  if (windows.size() < 4) return out;
  std::vector<double> sorted = windows;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  out.median_ms = sorted[sorted.size() / 2];
  if (out.median_ms <= 0) return out;
  const double slow = kStartupSlowFactor * out.median_ms;
  std::size_t lead = 0;
  while (lead < windows.size() && windows[lead] >= slow) ++lead;
  if (lead == 0 || lead * 4 > windows.size()) return out;
  if (std::any_of(windows.begin() + static_cast<std::ptrdiff_t>(lead), windows.end(), [&](double w) { return w >= slow; })) return out;
  const double ms = std::accumulate(windows.begin(), windows.begin() + static_cast<std::ptrdiff_t>(lead), 0.0);
  const double total = std::accumulate(windows.begin(), windows.end(), 0.0);
  if (ms < 0.1 * total) return out;
  out.count = static_cast<int>(lead);
  out.ms = ms;
  out.share = ms / total;
  return out;
}

}  // namespace stalldx::diagnose
