// One job, one trace per rank: the file names every command gives a rank's trace, and the rank a
// launcher (mpirun, srun, torchrun) gave this process through its environment.
#pragma once

#include <optional>
#include <string>

namespace stalldx {

// "out.json" -> "out.rank2.json", "out.json.gz" -> "out.rank2.json.gz" (the extension kept; none: appended).
std::string rank_trace_path(const std::string& path, int rank);
// "out.rank2.json" (rank_trace_path's) -> "out.rank*.json": every rank's trace, for the shell.
std::string rank_trace_pattern(const std::string& rank_path, int rank);

struct LauncherRank {
  int rank = 0, size = 1;
  std::string source;  // the variable it came from ("OMPI_COMM_WORLD_RANK", ...)
};
// This process's rank when a launcher started it as one of several (size > 1): Open MPI, PMIx, PMI
// (MPICH, Intel MPI), Slurm's srun, torchrun (RANK / WORLD_SIZE), in that order. None: not launched
// as one of several, or the values are not numbers (a rank outside [0, size) included).
std::optional<LauncherRank> launcher_rank();

}  // namespace stalldx
