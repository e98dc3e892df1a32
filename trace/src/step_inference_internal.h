// Internal to step_inference: what rule 4 (the CUDA period, cuda_period.cpp) shares with the other rules.
#pragma once

#include <cstdint>
#include <string>

#include "stalldx/record/step_inference.h"
#include "stalldx/trace_model.h"

namespace stalldx::record::detail {

// "thread 'main' (pid 7, tid 7)": a lane as people read it in the evidence.
std::string thread_label(const Trace& t, std::uint32_t lane);
// The lane whose runtime calls launched most device work; -1 when no call launched any.
std::int64_t launching_lane(const Trace& t);
// Rule 4: one step per batch copy (or burst of copies) of the loop's thread, else per launch of the
// kernel with the same work between its launches; adds the step ranges and sets the evidence (and
// kStepsBatchCopyBytesKey when a copy marks them). False when neither marks steps.
bool cuda_period(Trace& t, StepEvidence& ev);

}  // namespace stalldx::record::detail
