// A step's copies as evidence (diagnosis.cpp): the first two with their size, memory kind, correlation id
// and where they end against the consumer's range that issued them.
#pragma once

#include <cstddef>
#include <vector>

#include "stalldx/diagnose/diagnosis.h"
#include "trace_index.h"

namespace stalldx::diagnose {

// Appends to sd.details the first two memcpy records among `acts` (indices into ix.trace.activities)
// and, when there are more, how many the step had.
void describe_copies(const TraceIndex& ix, const std::vector<std::size_t>& acts, StepDiagnosis& sd);

}  // namespace stalldx::diagnose
