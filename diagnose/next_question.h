// Internal: the question a step's verdict leaves for the user — what to look at or change next — from the
// step's causes, the split of its wait (null: no producer records on its batch), the trace's facts
// (cores, decoding threads, the loop's CPU use) and the coverage. Empty for a step with no device records.
#pragma once

#include <string>
#include <string_view>

#include "input_split.h"
#include "trace_index.h"

namespace stalldx::diagnose {

std::string next_question(const StepDiagnosis& sd, const TraceIndex& ix, const Thresholds& th, const Coverage& cov, const InputSplit* split,
                          std::string_view top_cause);

}  // namespace stalldx::diagnose
