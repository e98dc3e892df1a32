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
  if (windows.size() < 4 || rep.coverage.begins_mid_run) return out;  // mid-run: start-up is before the trace
  std::vector<double> sorted = windows;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  out.median_ms = sorted[sorted.size() / 2];
  if (out.median_ms <= 0) return out;
  // slowest_from[i]: the slowest window from step i on.
  std::vector<double> slowest_from(windows.size() + 1, 0.0);
  for (std::size_t i = windows.size(); i-- > 0;) slowest_from[i] = std::max(windows[i], slowest_from[i + 1]);
  // The longest leading run (of at most a quarter of the steps) whose every step is slow and slower than
  // any step after the run.
  std::size_t lead = 0;
  double run_fastest = windows[0];
  for (std::size_t k = 0; k < windows.size() && windows[k] >= kStartupSlowFactor * out.median_ms && (k + 1) * 4 <= windows.size(); ++k) {
    run_fastest = std::min(run_fastest, windows[k]);
    if (run_fastest > slowest_from[k + 1]) lead = k + 1;
  }
  // A spike later on (a step kSpikeFactor x the median) makes the first slow steps spikes too.
  if (lead == 0 || slowest_from[lead] >= kSpikeFactor * out.median_ms) return out;
  out.count = static_cast<int>(lead);
  out.ms = std::accumulate(windows.begin(), windows.begin() + static_cast<std::ptrdiff_t>(lead), 0.0);
  out.share = out.ms / std::accumulate(windows.begin(), windows.end(), 0.0);
  return out;
}

}  // namespace stalldx::diagnose
