// A CUDA program that knows nothing of stalldx, for `record --sample`'s device test (ctest label gpu):
// --steps N NVTX "step" ranges, each launching a few kernels and a copy, and replaying a CUDA graph that
// was captured before the first step (so it is replayed across every detach). Every --every steps it
// prints "mem STEP RSS_KB DEVICE_FREE_MB": the host's resident memory and the device's free memory, for
// the test to check that attach/detach cycles leak neither. --step-ms N: each step lasts N ms at least,
// polling its stream (cudaStreamQuery) every millisecond after its work, as a loop whose host waits on
// the device does: calls between windows, whose exits make CUPTI's finalize. --no-graph: no graph
// captured or replayed.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <time.h>

namespace {
__global__ void scale(float* x, int n, float f) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * f + 1.0f;
}

long rss_kb() {
  long kb = -1;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f))
      if (std::strncmp(line, "VmRSS:", 6) == 0) kb = std::atol(line + 6);
    std::fclose(f);
  }
  return kb;
}

#define CHECK(call)                                                                         \
  do {                                                                                      \
    if (cudaError_t e = (call); e != cudaSuccess) {                                         \
      std::fprintf(stderr, "cuda_windows: %s: %s\n", #call, cudaGetErrorString(e));         \
      return 2;                                                                             \
    }                                                                                       \
  } while (0)
}  // namespace

int main(int argc, char** argv) {
  int steps = 240, every = 20, step_ms = 0;
  bool graph_on = true;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--no-graph") graph_on = false;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--steps") steps = std::atoi(argv[++i]);
    else if (std::string(argv[i]) == "--every") every = std::atoi(argv[++i]);
    else if (std::string(argv[i]) == "--step-ms") step_ms = std::atoi(argv[++i]);
  }
  const int n = 1 << 20;
  float *d = nullptr, *h = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  CHECK(cudaMallocHost(&h, n * sizeof(float)));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  // The graph: three kernels, captured once.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (graph_on) {
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int k = 0; k < 3; ++k) scale<<<(n + 255) / 256, 256, 0, s>>>(d, n, 0.5f);
    CHECK(cudaStreamEndCapture(s, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
  }
  const auto now_ms = [] {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
  };
  for (int step = 0; step < steps; ++step) {
    const double begin = now_ms();
    nvtxRangePushA("step");
    CHECK(cudaMemcpyAsync(d, h, n * sizeof(float), cudaMemcpyHostToDevice, s));
    for (int k = 0; k < 4; ++k) scale<<<(n + 255) / 256, 256, 0, s>>>(d, n, 1.01f);
    if (graph_on) CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    while (now_ms() - begin < step_ms) {
      (void)cudaStreamQuery(s);
      timespec ms{0, 1'000'000};
      nanosleep(&ms, nullptr);
    }
    nvtxRangePop();
    if (step % every == 0 || step == steps - 1) {
      size_t free_b = 0, total_b = 0;
      CHECK(cudaMemGetInfo(&free_b, &total_b));
      std::printf("mem %d %ld %zu\n", step, rss_kb(), free_b >> 20);
      std::fflush(stdout);
    }
  }
  if (graph_on) {
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
  }
  CHECK(cudaFreeHost(h));
  CHECK(cudaFree(d));
  return 0;
}
