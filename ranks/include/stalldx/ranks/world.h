// Ranks of a job launched by MPI (mpirun, srun with PMIx): who this process is, the facts every rank's
// trace carries (run id, host, clock offset to rank 0), and the step's all-reduce. With MPI absent from
// the build, or no MPI launcher, the world is this one process (rank 0 of 1).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "stalldx/pipeline/runner.h"
#include "stalldx/rank_paths.h"
#include "stalldx/status.h"

namespace stalldx::ranks {

struct World {
  int rank = 0, size = 1;
  int local_rank = 0;                     // rank among the ranks on this host (the GPU it uses)
  std::string host;
  std::uint64_t run_id = 0;               // rank 0's, broadcast: the same on every rank of one job
  std::int64_t clock_offset_ns = 0;       // add to this rank's CLOCK_MONOTONIC to get rank 0's (0 on rank 0's host)
  std::int64_t clock_uncertainty_ns = 0;  // half the best round trip of the exchange that measured it
  bool mpi = false;                       // MPI is initialized: leave() must be called
};

// True when an MPI launcher started this process (its environment says so).
bool launched_by_mpi();
// Whether this build can join an MPI job.
bool built_with_mpi();

// Initializes MPI (launched_by_mpi() only) and fills `w`: rank, size, local rank, host, run id, and the
// clock offset to rank 0 — 0 by construction on rank 0's host (one CLOCK_MONOTONIC), else measured by a
// timestamp exchange with rank 0 keeping the smallest round trip. Collective: every rank calls it.
Status join(World& w);
// Finalizes MPI if join() initialized it. Every rank calls it — except after a run that gave up waiting
// for a rank that never came (`abandoned`): finalizing would wait for it too, so the process ends
// without (the launcher is ending the job).
void leave(World& w, bool abandoned = false);

// Makes `c` this rank's config: rank and world size from `w` (with MPI), the GPU = local rank, the
// rank's --rank-override entries applied, the trace path given a rank suffix. Refuses world_size > 1
// with an all-reduce but no MPI job (the ranks could not meet).
Status configure_rank(const World& w, RunConfig& c);
// Every rank waits for every other (no-op alone).
Status barrier(const World& w);

// The trace's facts of the world: rank, world size (also in the run config), host, run_id, clock offset.
void describe(const World& w, std::map<std::string, std::string>& meta);

using stalldx::rank_trace_path;     // stalldx/rank_paths.h
using stalldx::rank_trace_pattern;

// The step's collective for this rank's config, or null when it has none (--allreduce-mb 0, --collective
// none, or auto alone). Auto, with world_size > 1: NCCL on the GPU's stream when the run has a CUDA
// device, MPI_Allreduce on host buffers with the stand-in — decided at start, once the device is known;
// nccl also alone (one rank: its records, its cost); mpi on the host whatever the device. Each step it
// first agrees with the others whether any rank is leaving; that wait ends when `stop` (may be null; the
// run's stop flag) is raised. `w` and `stop` must outlive it.
Status make_step_collective(const World& w, const RunConfig& c, const std::atomic<bool>* stop, std::unique_ptr<pipeline::StepCollective>& out);

}  // namespace stalldx::ranks
