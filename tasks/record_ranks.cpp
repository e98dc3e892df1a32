#include "record_ranks.h"

#include <fmt/format.h>
#include <unistd.h>

#include <map>

#include "stalldx/rank_facts.h"
#include "stalldx/rank_paths.h"
#include "stalldx/trace_io.h"

namespace stalldx::tasks {

std::string host_name() {
  char h[256] = {};
  return gethostname(h, sizeof h - 1) == 0 ? std::string(h) : std::string();
}

void split_ranks(const RecordOptions& o, const record::MergeOptions& mo, RecordResult& r) {
  std::map<int, int> world;  // rank -> world size
  std::string job;
  for (const record::RecordedProcess& p : r.merge.processes) {
    if (p.rank < 0) continue;
    world[p.rank] = p.world_size;
    if (job.empty()) job = p.job;
  }
  if (world.size() < 2) return;
  // One id for the job: the launcher's, else this recording's (every rank was recorded here).
  const std::string run_id = !job.empty() ? job : fmt::format("record-{}-{}", host_name(), getpid());
  diagnose::CrossRankAccumulator acc;
  for (const auto& [rank, size] : world) {
    record::MergeOptions m = mo;
    m.rank = rank;
    Trace t;
    record::MergeReport rep;
    if (Status st = record::merge_parts(r.parts_dir, o.roles, m, t, rep); !st.is_ok()) {
      r.merge.problems.push_back(fmt::format("rank {}: {}", rank, st.message()));
      continue;
    }
    for (const char* key : {"command", "exit_code", "cuda_records"})
      if (auto it = r.trace.meta.config.find(key); it != r.trace.meta.config.end()) t.meta.config[key] = it->second;
    t.meta.interrupted = t.meta.interrupted || r.trace.meta.interrupted;
    t.meta.host_facts = r.trace.meta.host_facts;  // every rank ran on this host
    t.meta.config["rank"] = std::to_string(rank);
    t.meta.config["world_size"] = std::to_string(size);
    t.meta.config[rank_facts::kRunId] = run_id;
    t.meta.config[rank_facts::kHost] = host_name();
    const std::string path = rank_trace_path(r.trace_path, rank);
    if (Status w = write_trace_file(t, path); !w.is_ok()) {
      r.recording_error = fmt::format("writing {}: {}", path, w.message());
      continue;
    }
    r.rank_traces.push_back(path);
    diagnose::RankSteps rs;
    if (Status st = diagnose::rank_steps(t, path, o.thresholds, rs); !st.is_ok()) {
      r.merge.problems.push_back(st.message());
      continue;
    }
    r.ranks_standin = r.ranks_standin || rs.standin;
    r.rank_lines.push_back(diagnose::rank_steps_line(rs));
    if (Status st = acc.add(rs); !st.is_ok()) r.merge.problems.push_back(st.message());
  }
  if (!r.rank_lines.empty()) r.ranks = acc.finish();
}

}  // namespace stalldx::tasks
