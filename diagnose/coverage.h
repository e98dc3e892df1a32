// What a trace lets the diagnosis say, and how far to trust it: the notes on what was recorded,
// dropped, doubted or inferred, and the reasons confidence is lowered (Coverage in diagnosis.h).
#pragma once

#include "stalldx/diagnose/diagnosis.h"
#include "trace_doubts.h"
#include "trace_index.h"

namespace stalldx::diagnose {

// What the trace's metadata says was recorded and dropped, and whether the index found device records.
Coverage recorded_coverage(const Trace& t, const TraceIndex& ix);

// Fills cov.notes, cov.confidence and cov.lowered_because from the trace, its index and its doubts
// (cov's counts — dropped, unmatched, device records — are set by the caller first).
void judge_coverage(const Trace& t, const TraceIndex& ix, const TraceDoubts& doubts, Coverage& cov);

}  // namespace stalldx::diagnose
