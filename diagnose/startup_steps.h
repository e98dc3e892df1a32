// Internal: start-up counted as steady state — the first steps of a run that no warm-up set aside and
// that were slower than every later step (lazy initialisation, cuDNN autotuning, the loader's first
// batches). recommend.cpp names them with the warm-up that sets them aside and gives its advice on the
// steps after them: a stall only start-up had (the first batch not yet decoded) is no reason for more
// workers, and "the input keeps up" is about the steady steps that follow.
#pragma once

#include "stalldx/diagnose/diagnosis.h"

namespace stalldx::diagnose {

struct StartupSteps {
  int count = 0;          // leading steady steps taken as start-up; 0 = none
  double ms = 0;          // their windows together
  double median_ms = 0;   // the median steady step's window
  double share = 0;       // ms / the steady window
};
inline constexpr double kStartupSlowFactor = 1.5;
inline constexpr double kSpikeFactor = 3;

// Over the steady steps of `rep`, in step order: the longest leading run of steps each at least
// kStartupSlowFactor x the median step and slower than every step after the run, at most a quarter of
// the steps (of at least 4), when no later step is a spike (kSpikeFactor x the median: spikes that
// recur are a pattern of the run, the first one included). Named whatever its share of the window: its
// stall is left out of the advice either way.
StartupSteps find_startup_steps(const Report& rep);

}  // namespace stalldx::diagnose
