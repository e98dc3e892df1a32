// The parts of ranks/world.h that do not depend on MPI.
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "stalldx/rank_facts.h"
#include "stalldx/ranks/world.h"

namespace stalldx::ranks {

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (const char* s = std::getenv(v); s != nullptr && *s != '\0') return true;
  return false;
}

void describe(const World& w, std::map<std::string, std::string>& meta) {
  meta["rank"] = std::to_string(w.rank);
  meta["world_size"] = std::to_string(w.size);
  meta[rank_facts::kHost] = w.host;
  meta[rank_facts::kRunId] = fmt::format("{:016x}", w.run_id);
  meta[rank_facts::kClockOffsetNs] = std::to_string(w.clock_offset_ns);
  meta[rank_facts::kClockUncertaintyNs] = std::to_string(w.clock_uncertainty_ns);
}

Status configure_rank(const World& w, RunConfig& c) {
  if (w.mpi) {
    c.rank = w.rank;
    c.world_size = w.size;
    if (w.size > 1 && c.device != DeviceKind::none) c.device_index = w.local_rank;  // one GPU per rank on a host
  } else if (c.world_size > 1 && c.allreduce_mb > 0) {
    return Status::invalid(fmt::format("--world-size {} without an MPI launcher: the ranks could not meet for the all-reduce; start them with "
                                       "`mpirun -np {} stalldx run ...`, or run one rank's shard alone with --allreduce-mb 0",
                                       c.world_size, c.world_size));
  }
  if (c.rank >= c.world_size) return Status::invalid(fmt::format("--rank {} is not below --world-size {}", c.rank, c.world_size));
  if (Status st = apply_rank_overrides(c); !st.is_ok()) return st;
  if (c.world_size > 1 && !c.trace.empty()) c.trace = rank_trace_path(c.trace, c.rank);
  return Status::ok();
}


}  // namespace stalldx::ranks
