// Internal: the run's headline — what bounds it, by share of steady time (diagnosis.h Headline).
#pragma once

#include "startup_steps.h"

namespace stalldx::diagnose {

// From the steady steps of `rep` after `startup` (their windows, busy and stall time by class).
Headline make_headline(const Report& rep, const StartupSteps& startup);

}  // namespace stalldx::diagnose
