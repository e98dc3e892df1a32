// ranks/world.h without MPI in the build: one process, rank 0 of 1. Started by an MPI launcher it
// refuses (each process would think itself alone and run the whole dataset).
#include <unistd.h>

#include "stalldx/ranks/world.h"
#include "transport.h"

namespace stalldx::ranks {

bool built_with_mpi() { return false; }

Status join(World& w) {
  w = World{};
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  w.host = host;
  if (launched_by_mpi())
    return Status::unavailable("started by an MPI launcher, but this stalldx was built without MPI (install libopenmpi-dev and rebuild)");
  return Status::ok();
}

void leave(World&, bool) {}

Status barrier(const World&) { return Status::ok(); }

Status agree_first(const World& w, bool mine, int& first, const std::atomic<bool>*, bool* stopped) {
  if (stopped != nullptr) *stopped = false;
  first = mine ? w.rank : -1;
  return Status::ok();
}
Status host_sum(const World&, float*, std::size_t, const std::atomic<bool>*, bool* stopped) {
  if (stopped != nullptr) *stopped = false;
  return Status::ok();
}
Status broadcast_from_root(const World&, void*, std::size_t) { return Status::ok(); }

}  // namespace stalldx::ranks
