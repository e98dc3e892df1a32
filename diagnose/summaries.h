// Internal: the report's tables and its run-level summary, built after the per-step verdicts.
#pragma once

#include "trace_index.h"

namespace stalldx::diagnose {

// Summaries (key_averages / nsys stats style) and copy bandwidth; fills the report's tables.
void build_summaries(const Trace& t, const TraceIndex& ix, Report& rep);
// The all-reduce's host ranges and the device work they enqueued (ranges == 0 when there is none).
void build_collective_summary(const Trace& t, CollectiveSummary& out);
// Run-level summary and recommendations from the per-step verdicts.
void build_run_summary(const Trace& t, const TraceIndex& ix, const Thresholds& th, Report& rep);

}  // namespace stalldx::diagnose
