// What the step's collective (step_collective.cpp) needs from the ranks' transport: MPI in
// world_mpi.cpp, the lone process in world_single.cpp. Every call is collective over the world (every
// rank makes it, in the same order) and made by the thread that joined. Waits poll with short sleeps, so
// a rank waiting for a straggler leaves its CPU to the host's other work.
#pragma once

#include <atomic>
#include <cstddef>

#include "stalldx/ranks/world.h"

namespace stalldx::ranks {

// `first` = the lowest rank on which `mine` is true, or -1 when it is true on none. When `stop` (may be
// null) becomes true while it waits — a rank that never comes (killed: the launcher then stops the
// others) — it gives up: `*stopped` is set and `first` is -1.
Status agree_first(const World& w, bool mine, int& first, const std::atomic<bool>* stop = nullptr, bool* stopped = nullptr);
// Sums `n` floats across ranks, in place; gives up like agree_first when `stop` is raised. `data` must
// outlive the job when it gives up (an abandoned request may still write into it).
Status host_sum(const World& w, float* data, std::size_t n, const std::atomic<bool>* stop = nullptr, bool* stopped = nullptr);
// Rank 0's `bytes` bytes at `data` on every rank.
Status broadcast_from_root(const World& w, void* data, std::size_t bytes);

}  // namespace stalldx::ranks
