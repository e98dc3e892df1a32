// The keys a rank's trace carries in its metadata beside its run config (rank and world_size are run
// fields): ranks/ and the step loop write them, diagnose/ reads them. One spelling for both sides.
#pragma once

namespace stalldx::rank_facts {

inline constexpr const char* kRunId = "run_id";                          // rank 0's id, hex: the same on every rank of a job
inline constexpr const char* kHost = "host";
inline constexpr const char* kClockOffsetNs = "clock_offset_ns";         // add to this rank's clock to get rank 0's
inline constexpr const char* kClockUncertaintyNs = "clock_uncertainty_ns";
// The wall-clock time the trace's times count from (torch.profiler's baseTimeNanoseconds), when it says.
inline constexpr const char* kBaseTimeNs = "base_time_ns";
// The step whose all-reduce this rank was still waiting in when its run was stopped: a rank never came.
inline constexpr const char* kStuckInCollectiveStep = "stuck_in_collective_step";
// The rank that left (Ctrl-C, a failure) at the end of the trace's last step; this one stopped with it.
inline constexpr const char* kStoppedByRank = "stopped_by_rank";

}  // namespace stalldx::rank_facts
