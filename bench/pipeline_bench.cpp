// Pipeline throughput, one run, same files: one-thread decode + transform rate, pipeline img/s at 1, 2,
// 4, ... workers (unprofiled, host stand-in with 0 ms steps so the input side is the limit), scaling
// efficiency = img/s / (workers x one-thread rate), and profiled / unprofiled img/s at the top setting.
//   pipeline_bench [--data DIR] [--max-workers N] [--steps S] [--batch B]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "stalldx/pipeline/bad_samples.h"
#include "dataset_index.h"
#include "stalldx/datasets/generator.h"
#include "stalldx/pipeline/runner.h"
#include "sample_loader.h"
#include "storage.h"

using namespace stalldx;
using namespace stalldx::pipeline;

namespace {
double run_once(RunConfig c) {
  RunResult r;
  Status st = run_pipeline(c, r);
  if (!st.is_ok()) {
    fmt::print(stderr, "run failed: {}\n", st.message());
    std::exit(1);
  }
  return r.images_per_second;
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  std::string data;
  int max_workers = static_cast<int>(std::thread::hardware_concurrency());
  int steps = 30, batch = 128;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--data")) data = argv[i + 1];
    else if (!std::strcmp(argv[i], "--max-workers")) max_workers = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--batch")) batch = std::atoi(argv[i + 1]);
  }
  if (data.empty()) {
    if (Status st = datasets::ensure_default_dataset(data, true); !st.is_ok()) {
      fmt::print(stderr, "{}\n", st.message());
      return 1;
    }
  }
  DatasetIndex index;
  if (Status st = load_index(data, index); !st.is_ok()) {
    fmt::print(stderr, "{}\n", st.message());
    return 1;
  }
  RunConfig c;
  c.data = data;
  c.batch = batch;
  c.steps = steps;
  c.warmup = 2;
  c.prefetch = 4;
  c.device = DeviceKind::none;
  c.step_ms = 0;
  c.profile = false;

  // One thread, the same per-sample code the workers run (page-cache reads included), over the files.
  StorageReader storage(StorageKnobs{});
  BadSampleLog bad;
  SampleLoader loader(c, index, storage, bad);
  std::vector<std::uint8_t> out(sample_bytes(c));
  const int n = std::min<int>(static_cast<int>(index.samples.size()), 2000);
  for (int i = 0; i < std::min(n, 64); ++i) {  // warm the page cache and the decoder
    bool failed = false;
    loader.load(SampleTask{0, i, static_cast<std::uint32_t>(i), false, out.data()}, failed);
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    bool failed = false;
    loader.load(SampleTask{0, i, static_cast<std::uint32_t>(i % index.samples.size()), false, out.data()}, failed);
  }
  const double one = n / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("dataset {} ({} files); batch {}, {} steps, float32 NCHW train transform\n", data, index.samples.size(), batch, steps);
  fmt::print("one-thread decode + transform: {:.0f} img/s ({:.3f} ms/img)\n", one, 1000.0 / one);
  fmt::print("{:>8} {:>10} {:>12} {:>11}\n", "workers", "img/s", "img/s/worker", "efficiency");
  for (int w = 1; w <= max_workers; w *= 2) {
    c.workers = w;
    const double ips = median({run_once(c), run_once(c), run_once(c)});
    fmt::print("{:>8} {:>10.0f} {:>12.0f} {:>11.2f}\n", w, ips, ips / w, ips / (w * one));
    if (w < max_workers && w * 2 > max_workers) w = max_workers / 2;  // end exactly on max_workers
  }
  c.workers = max_workers;
  std::vector<double> on, off;
  for (int k = 0; k < 3; ++k) {
    c.profile = false;
    off.push_back(run_once(c));
    c.profile = true;
    on.push_back(run_once(c));
  }
  fmt::print("profiled / unprofiled at {} workers: {:.0f} / {:.0f} img/s = {:.3f}\n", max_workers, median(on), median(off),
             median(on) / median(off));
  return 0;
}
