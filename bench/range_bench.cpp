// Cost of one stalldx range (begin + end, recorded) next to two clock reads — the floor any range pays.
// Target: a range <= 1.5 x two clock reads. Run: build/<preset>/bench/range_bench
#include <benchmark/benchmark.h>

#include "stalldx/profiler.h"

namespace {

void BM_TwoClockReads(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(stalldx::now_ns());
    benchmark::DoNotOptimize(stalldx::now_ns());
  }
}
BENCHMARK(BM_TwoClockReads);

void BM_RangeRecorded(benchmark::State& state) {
  stalldx::Session s;
  stalldx::SessionOptions o;
  o.cpu_time = false;
  o.nvtx = false;
  o.ranges_per_thread = 1u << 21;  // large enough that nothing is dropped
  s.start(o);
  { STALLDX_RANGE(decode, "register"); }  // the thread's one-time registration, outside the timing
  for (auto _ : state) {
    STALLDX_RANGE(decode, "bench");
    benchmark::ClobberMemory();
  }
  s.stop();
  state.counters["dropped"] = static_cast<double>(s.trace().meta.dropped_host);
}
BENCHMARK(BM_RangeRecorded)->Iterations(2'000'000);

void BM_RangeWithCpuTime(benchmark::State& state) {
  stalldx::Session s;
  stalldx::SessionOptions o;
  o.cpu_time = true;
  o.nvtx = false;
  o.ranges_per_thread = 1u << 24;
  s.start(o);
  { STALLDX_RANGE(decode, "register"); }
  for (auto _ : state) {
    STALLDX_RANGE(decode, "bench_cpu");
    benchmark::ClobberMemory();
  }
  s.stop();
}
BENCHMARK(BM_RangeWithCpuTime)->Iterations(2'000'000);

void BM_RangeNotRecording(benchmark::State& state) {
  for (auto _ : state) {
    STALLDX_RANGE(decode, "idle");
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_RangeNotRecording);

}  // namespace

BENCHMARK_MAIN();
