// Internal to tasks/record.cpp: the ranks a launcher started under `record` (each process's 'r' line,
// part_format.h). With two or more, one trace per rank is merged and written beside the whole trace,
// and the ranks are diagnosed across (diagnose/ranks.h), as `stalldx diagnose X.rank*.json` would.
#pragma once

#include "stalldx/record/merge.h"
#include "stalldx/tasks/record.h"

namespace stalldx::tasks {

// This host's name (rank_facts::kHost), "" when it has none.
std::string host_name();

// Splits the recording by rank when CMD started several (r.merge.processes say which); nothing otherwise.
void split_ranks(const RecordOptions& o, const record::MergeOptions& mo, RecordResult& r);

}  // namespace stalldx::tasks
