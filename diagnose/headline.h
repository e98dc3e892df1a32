// Internal: the run's headline — what bounds it, by share of steady time (diagnosis.h Headline).
#pragma once

#include <cstdint>
#include <set>

#include "startup_steps.h"

namespace stalldx::diagnose {

// The device is the limit only where the loop's stalls together took less than this share of steady time;
// above it, the largest stall class bounds the run (a faster input or submission buys that much). The
// same share decides "the input pipeline keeps up".
inline constexpr double kKeepsUpShare = 0.1;

// From the steady steps of `rep` after `startup` (their windows, busy and stall time by class), less the
// steps in `evaluation` (steps that ran an evaluation pass: their waits are another loader's input; the
// caller passes them only while they are a minority of the steps, see kEvaluationSetAsideShare).
Headline make_headline(const Report& rep, const StartupSteps& startup, const std::set<std::int64_t>& evaluation = {});

}  // namespace stalldx::diagnose
