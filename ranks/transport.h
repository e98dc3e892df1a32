// What the step's collective (step_collective.cpp) needs from the ranks' transport: MPI in
// world_mpi.cpp, the lone process in world_single.cpp. Every call is collective over the world (every
// rank makes it, in the same order) and made by the thread that joined. Waits poll with short sleeps, so
// a rank waiting for a straggler leaves its CPU to the host's other work.
#pragma once

#include <cstddef>

#include "stalldx/ranks/world.h"

namespace stalldx::ranks {

// `any` = whether `mine` is true on any rank.
Status agree_any(const World& w, bool mine, bool& any);
// Sums `n` floats across ranks, in place.
Status host_sum(const World& w, float* data, std::size_t n);
// Rank 0's `bytes` bytes at `data` on every rank.
Status broadcast_from_root(const World& w, void* data, std::size_t bytes);

}  // namespace stalldx::ranks
