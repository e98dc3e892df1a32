// One job, one trace per rank: the file names every command gives a rank's trace, and the rank a
// launcher (mpirun, srun, torchrun) gave this process through its environment.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "stalldx/status.h"

namespace stalldx {

// "out.json" -> "out.rank2.json", "out.json.gz" -> "out.rank2.json.gz" (the extension kept; none: appended).
std::string rank_trace_path(const std::string& path, int rank);
// "out.rank2.json" (rank_trace_path's) -> "out.rank*.json": every rank's trace, for the shell.
std::string rank_trace_pattern(const std::string& rank_path, int rank);

// Each folder among `paths` replaced by the traces in it (regular files named *.json or *.json.gz, not
// hidden, sorted): `stalldx diagnose DIR` for a job's one-trace-per-rank folder (torch.profiler's
// tensorboard_trace_handler writes one). Fails naming a folder with none.
Status expand_trace_folders(std::vector<std::string>& paths);

struct LauncherRank {
  int rank = 0, size = 1;
  std::string source;  // the variable it came from ("OMPI_COMM_WORLD_RANK", ...)
  // The launch it belongs to, the same on every rank of one job (Open MPI's job id, PMIx's namespace,
  // Slurm's job.step, torchrun's run id or MASTER_ADDR:MASTER_PORT); empty where the launcher gives none.
  std::string job;
};
// This process's rank when a launcher started it as one of several (size > 1): Open MPI, PMIx, PMI
// (MPICH, Intel MPI), Slurm's srun, torchrun (RANK / WORLD_SIZE), in that order. None: not launched
// as one of several, or the values are not numbers (a rank outside [0, size) included).
std::optional<LauncherRank> launcher_rank();

}  // namespace stalldx
