// Internal to kineto.cpp: what a torch.profiler trace says about the job it belongs to — its
// `distributedInfo` (rank, world size, backend: one trace per rank of a DDP/FSDP job) and its
// `baseTimeNanoseconds` (the wall-clock time its timestamps count from) — as the trace metadata a rank's
// trace carries (rank_facts.h), so `stalldx diagnose rank*.pt.trace.json.gz` diagnoses across ranks.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "stalldx/trace_model.h"

namespace stalldx::record {

// `events`: where the traceEvents array's content lies in `text` when it has Kineto's own layout (only
// the rest is parsed again), else nullopt (the whole text is). Top-level keys only: an event's name
// cannot pose as them.
void read_kineto_job(const std::string& text, std::optional<std::string_view> events, TraceMeta& meta);

}  // namespace stalldx::record
