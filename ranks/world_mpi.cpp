// ranks/world.h on MPI (Open MPI from Debian; any MPI-3 library): MPI_THREAD_FUNNELED — only the
// thread that joined (the consumer, which runs the steps) makes MPI calls. Errors are returned, not
// fatal (MPI_ERRORS_RETURN), so they reach the report with the call named.
#include <mpi.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <climits>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>

#include "stalldx/profiler.h"
#include "stalldx/ranks/world.h"
#include "transport.h"

namespace stalldx::ranks {

namespace {
Status check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return Status::ok();
  char msg[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return Status::io(fmt::format("{} failed: {}", what, msg));
}

// Rank 0's clock minus this rank's, by ping-pong with rank 0 (Cristian's method): the exchange with
// the smallest round trip wins; its half round trip bounds the error. Rank 0 drives every remote rank
// in turn; `remote[k]`: rank k is on another host than rank 0.
constexpr int kRounds = 16;
constexpr int kTag = 4711;
Status measure_offsets(World& w, const std::vector<int>& remote) {
  if (w.rank == 0) {
    for (int k = 1; k < w.size; ++k) {
      if (!remote[static_cast<std::size_t>(k)]) continue;
      std::int64_t best = INT64_MAX, offset = 0;
      for (int i = 0; i < kRounds; ++i) {
        int ping = i;
        std::int64_t theirs = 0;
        const std::int64_t t1 = now_ns();
        if (Status st = check(MPI_Send(&ping, 1, MPI_INT, k, kTag, MPI_COMM_WORLD), "MPI_Send (clock)"); !st.is_ok()) return st;
        if (Status st = check(MPI_Recv(&theirs, 1, MPI_INT64_T, k, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv (clock)"); !st.is_ok())
          return st;
        const std::int64_t t2 = now_ns();
        if (t2 - t1 < best) {
          best = t2 - t1;
          offset = t1 + (t2 - t1) / 2 - theirs;
        }
      }
      std::int64_t result[2] = {offset, best / 2};
      if (Status st = check(MPI_Send(result, 2, MPI_INT64_T, k, kTag, MPI_COMM_WORLD), "MPI_Send (clock)"); !st.is_ok()) return st;
    }
  } else if (remote[static_cast<std::size_t>(w.rank)]) {
    for (int i = 0; i < kRounds; ++i) {
      int ping = 0;
      if (Status st = check(MPI_Recv(&ping, 1, MPI_INT, 0, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv (clock)"); !st.is_ok()) return st;
      const std::int64_t mine = now_ns();
      if (Status st = check(MPI_Send(&mine, 1, MPI_INT64_T, 0, kTag, MPI_COMM_WORLD), "MPI_Send (clock)"); !st.is_ok()) return st;
    }
    std::int64_t result[2] = {};
    if (Status st = check(MPI_Recv(result, 2, MPI_INT64_T, 0, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv (clock)"); !st.is_ok())
      return st;
    w.clock_offset_ns = result[0];
    w.clock_uncertainty_ns = result[1];
  }
  return Status::ok();
}

// Completes a nonblocking collective by polling. Pace::sleep — where a rank waits for a straggler (the
// agreement) — sleeps 50 µs between polls, leaving its CPU to the host's other work (MPI's blocking calls
// spin, which on a shared or oversubscribed host slows the straggler itself). Pace::spin — moving bytes
// once every rank is there — polls back to back: each poll progresses the schedule one step (measured
// here, 3 ranks on 2 cores, 1 MB: 8-12 ms spinning, 10-20 ms yielding between polls, 17-22 ms in the
// blocking MPI_Allreduce). Gives up, setting `*stopped`, when `stop` becomes true (the request is left
// incomplete: the job is ending).
enum class Pace { sleep, spin };
Status complete(MPI_Request& req, const char* what, Pace pace, const std::atomic<bool>* stop, bool* stopped) {
  for (;;) {
    int done = 0;
    if (Status st = check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what); !st.is_ok()) return st;
    if (done) return Status::ok();
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
      if (stopped != nullptr) *stopped = true;
      return Status::ok();
    }
    if (pace == Pace::sleep) {
      timespec ts{0, 50'000};
      nanosleep(&ts, nullptr);
    }
  }
}

}  // namespace

bool built_with_mpi() { return true; }

Status join(World& w) {
  w = World{};
  char host[MPI_MAX_PROCESSOR_NAME + 1] = {};
  gethostname(host, sizeof host - 1);
  w.host = host;
  if (!launched_by_mpi()) return Status::ok();
  int provided = 0;
  if (Status st = check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread"); !st.is_ok()) return st;
  w.mpi = true;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  MPI_Comm node;
  if (Status st = check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w.rank, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
      !st.is_ok())
    return st;
  MPI_Comm_rank(node, &w.local_rank);
  MPI_Comm_free(&node);
  if (w.rank == 0) {
    std::random_device rd;
    w.run_id = (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(now_ns());
  }
  if (Status st = check(MPI_Bcast(&w.run_id, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast (run id)"); !st.is_ok()) return st;
  char host0[sizeof host] = {};
  std::memcpy(host0, host, sizeof host);
  if (Status st = check(MPI_Bcast(host0, sizeof host0, MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast (host)"); !st.is_ok()) return st;
  int mine_remote = std::strcmp(host0, host) != 0 ? 1 : 0;
  std::vector<int> remote(static_cast<std::size_t>(w.size), 0);
  if (Status st = check(MPI_Allgather(&mine_remote, 1, MPI_INT, remote.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather (hosts)"); !st.is_ok())
    return st;
  return measure_offsets(w, remote);
}

Status barrier(const World& w) { return w.mpi ? check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier") : Status::ok(); }

void leave(World& w, bool abandoned) {
  if (w.mpi && !abandoned) MPI_Finalize();
  w.mpi = false;
}

Status agree_first(const World& w, bool mine, int& first, const std::atomic<bool>* stop, bool* stopped) {
  first = mine ? w.rank : -1;
  if (stopped != nullptr) *stopped = false;
  if (!w.mpi) return Status::ok();
  // Static: an abandoned request (stopped) may still write into them while the job ends.
  static int in = 0, out = 0;
  in = mine ? w.rank : INT_MAX;
  MPI_Request req;
  if (Status st = check(MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req), "MPI_Iallreduce (agreement)"); !st.is_ok()) return st;
  bool gave_up = false;
  if (Status st = complete(req, "MPI_Iallreduce (agreement)", Pace::sleep, stop, &gave_up); !st.is_ok()) return st;
  if (stopped != nullptr) *stopped = gave_up;
  first = gave_up || out == INT_MAX ? -1 : out;
  return Status::ok();
}

// It follows the step's agreement, where the ranks waited for each other, so every rank is here at once
// and the call only moves bytes: polled back to back (polled with 50 µs sleeps it took 280 ms for 51 MB on
// 4 ranks of the H200 host), still ending when `stop` is raised — a rank killed during it
// would otherwise hold the others until the launcher kills them too, before they write their traces.
Status host_sum(const World& w, float* data, std::size_t n, const std::atomic<bool>* stop, bool* stopped) {
  if (stopped != nullptr) *stopped = false;
  if (!w.mpi || n == 0) return Status::ok();
  // A buffer of the caller's that an abandoned request may still write into: the job is ending then.
  MPI_Request req;
  if (Status st = check(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req), "MPI_Iallreduce (gradients)");
      !st.is_ok())
    return st;
  return complete(req, "MPI_Iallreduce (gradients)", Pace::spin, stop, stopped);
}

Status broadcast_from_root(const World& w, void* data, std::size_t bytes) {
  if (!w.mpi) return Status::ok();
  return check(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
}

}  // namespace stalldx::ranks
