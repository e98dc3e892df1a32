// Internal: start-up counted as steady state — the first steps of a run that no warm-up set aside and
// that took many times a typical step (lazy initialisation, cuDNN autotuning, the loader's first
// batches). recommend.cpp says so and names the warm-up that sets them aside: every total over the
// steady window (its stall shares, "the input keeps up") is otherwise mostly about start-up.
#pragma once

#include "stalldx/diagnose/diagnosis.h"

namespace stalldx::diagnose {

struct StartupSteps {
  int count = 0;          // leading steady steps that took >= kStartupSlowFactor x the median step; 0 = none
  double ms = 0;          // their windows together
  double median_ms = 0;   // the median steady step's window
  double share = 0;       // ms / the steady window
};
inline constexpr double kStartupSlowFactor = 3;

// Over the steady steps of `rep`, in step order: the leading run of steps at least kStartupSlowFactor x
// the median step, when no later step is that slow (a slow step every few steps is a pattern of the
// run, not start-up), they are at most a quarter of the steps, and they hold at least 10 % of the
// steady window.
StartupSteps find_startup_steps(const Report& rep);

}  // namespace stalldx::diagnose
