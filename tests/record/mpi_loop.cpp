// An MPI program that knows nothing of stalldx (the C API only): each rank runs --steps NVTX "step"
// ranges; inside each, "read_batch" (sleeps --read-ms: waiting, like storage), "compute" (sleeps
// --step-ms: no CPU, so three ranks on two cores do not fight) and "allreduce" (MPI_Allreduce of a few
// KB). --slow-rank R sleeps --slow-read-ms instead in its reads: the straggler, waited for by the others.
#include <mpi.h>
#include <nvtx3/nvToolsExt.h>
#include <time.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace {
void sleep_ms(double ms) {
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>((ms - 1000 * static_cast<long>(ms / 1000)) * 1e6)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}
}  // namespace

int main(int argc, char** argv) {
  int steps = 20, slow_rank = -1;
  double read_ms = 2, slow_read_ms = 30, step_ms = 10;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--slow-rank")) slow_rank = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--read-ms")) read_ms = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--slow-read-ms")) slow_read_ms = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--step-ms")) step_ms = std::atof(argv[++i]);
  }
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<float> grads(1024, 1.0f), sum(1024);
  for (int s = 0; s < steps; ++s) {
    nvtxRangePushA("step");
    nvtxRangePushA("read_batch");
    sleep_ms(rank == slow_rank ? slow_read_ms : read_ms);
    nvtxRangePop();
    nvtxRangePushA("compute");
    sleep_ms(step_ms);
    nvtxRangePop();
    nvtxRangePushA("allreduce");
    MPI_Allreduce(grads.data(), sum.data(), static_cast<int>(grads.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    nvtxRangePop();
    nvtxRangePop();
  }
  MPI_Finalize();
  return 0;
}
