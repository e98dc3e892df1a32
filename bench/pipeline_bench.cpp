// Pipeline throughput, one run, same files: the decode-only ceiling (full-size decode of the files held in
// memory, 1 and N threads), the one-thread cost of each stage per image (read, header, region decode,
// the fused crop/resize + flip + normalize + write into the slot, and that pass for uint8 output), the
// one-thread rate of the whole per-sample path, pipeline img/s at 1, 2, 4, ... workers (unprofiled, host
// stand-in with 0 ms steps so the input side is the limit) with both ratios — ÷ (workers x one-thread
// rate) and ÷ the decode-only ceiling at that many threads — and profiled / unprofiled img/s at the top.
// Last, the one-thread rate pinned to each CPU in turn: on a host whose CPUs are not equally fast (a VM's
// vCPUs), N x one thread measured on one CPU is not what N CPUs can give; their sum is.
//   pipeline_bench [--data DIR] [--max-workers N] [--steps S] [--batch B]
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "stalldx/pipeline/bad_samples.h"
#include "dataset_index.h"
#include "stalldx/datasets/generator.h"
#include "stalldx/pipeline/runner.h"
#include "sample_loader.h"
#include "jpeg_decoder.h"
#include "sampler.h"
#include "storage.h"
#include "transform.h"

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
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Full-size decodes of in-memory files on `threads` threads, each with its own decoder: img/s.
double decode_only(const std::vector<std::vector<std::uint8_t>>& files, int threads) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int k = 0; k < threads; ++k)
    pool.emplace_back([&, k] {
      JpegDecoder dec;
      for (std::size_t i = static_cast<std::size_t>(k); i < files.size(); i += static_cast<std::size_t>(threads)) {
        JpegHeader h;
        DecodedRegion region;
        if (dec.read_header(files[i].data(), files[i].size(), h).is_ok()) (void)dec.decode(CropBox{0, 0, h.width, h.height, false}, 1, false, region);
      }
    });
  for (std::thread& t : pool) t.join();
  return static_cast<double>(files.size()) / seconds_since(t0);
}

// The one-thread rate of the per-sample path (SampleLoader, page-cache reads) on `images` samples from `first`.
double one_thread_rate(const RunConfig& c, const DatasetIndex& index, StorageReader& storage, int first, int images) {
  BadSampleLog bad;
  SampleLoader loader(c, index, storage, bad);
  std::vector<std::uint8_t> out(sample_bytes(c));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = first; i < first + images; ++i) {
    bool failed = false;
    loader.load(SampleTask{0, i, static_cast<std::uint32_t>(i % index.samples.size()), false, out.data()}, failed);
  }
  return images / seconds_since(t0);
}

// The same, pinned to each CPU of this process's affinity mask in turn (one at a time): img/s by CPU.
std::vector<std::pair<int, double>> per_cpu_rates(const RunConfig& c, const DatasetIndex& index, StorageReader& storage, int images) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  std::vector<std::pair<int, double>> rates;
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) return rates;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &mask)) continue;
    double rate = 0;
    std::thread t([&] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) return;
      (void)one_thread_rate(c, index, storage, 0, std::min(images, 32));  // warm this CPU's caches and clock
      rate = one_thread_rate(c, index, storage, 0, images);
    });
    t.join();
    if (rate > 0) rates.emplace_back(cpu, rate);
  }
  return rates;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
// One thread, stage by stage, as the per-sample path runs them, over the first n files.
void print_stage_costs(const RunConfig& c, const DatasetIndex& index, StorageReader& storage, int n) {
  JpegDecoder dec;
  std::vector<std::uint8_t> buf, slot(sample_bytes(c));
  double t_read = 0, t_header = 0, t_decode = 0, t_resample = 0, t_uint8 = 0;
  for (int i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    (void)storage.read(index.samples[static_cast<std::size_t>(i)].path, buf);
    t_read += seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    JpegHeader h;
    if (!dec.read_header(buf.data(), buf.size(), h).is_ok()) continue;
    t_header += seconds_since(t0);
    std::mt19937_64 rng(mix64(c.seed ^ 0xA5A5A5A5ull, static_cast<std::uint64_t>(i)));
    const CropBox box = random_resized_crop(h.width, h.height, rng);
    t0 = std::chrono::steady_clock::now();
    DecodedRegion region;
    if (!dec.decode(box, choose_dct_denominator(box, c.size, c.dct_scaling), c.roi_decode, region).is_ok()) continue;
    t_decode += seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    resample_into(region, box, c.size, OutputFormat::float32_nchw, slot.data());
    t_resample += seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    resample_into(region, box, c.size, OutputFormat::uint8_nhwc, slot.data());
    t_uint8 += seconds_since(t0);
  }
  const auto us = [n](double t) { return t / n * 1e6; };
  fmt::print("one thread, per image: read {:.1f} us, header {:.1f} us, region decode (ROI + DCT scaling) {:.1f} us, "
             "crop/resize+flip+normalize+write float32 {:.1f} us (uint8 {:.1f} us)\n",
             us(t_read), us(t_header), us(t_decode), us(t_resample), us(t_uint8));
}

// Pipeline img/s at 1, 2, 4, ... max_workers (median of 3) beside the decode-only loop at as many threads.
void print_scaling(RunConfig c, const std::vector<std::vector<std::uint8_t>>& files, int max_workers, double one, double ceiling_one) {
  // efficiency = img/s ÷ (workers × one thread); the decode-only loop's own efficiency beside it is what
  // the host gives any loop of independent decodes (SMT siblings, turbo, memory): the pipeline's share of it
  // is what its queues and counters cost.
  fmt::print("{:>8} {:>10} {:>12} {:>11} {:>14} {:>16} {:>12}\n", "workers", "img/s", "img/s/worker", "efficiency", "÷ decode-only",
             "decode-only eff", "÷ that eff");
  for (int w = 1; w <= max_workers; w *= 2) {
    c.workers = w;
    const double ips = median({run_once(c), run_once(c), run_once(c)});
    const double dec = decode_only(files, w), dec_eff = dec / (w * ceiling_one);
    fmt::print("{:>8} {:>10.0f} {:>12.0f} {:>11.2f} {:>14.2f} {:>16.2f} {:>12.2f}\n", w, ips, ips / w, ips / (w * one), ips / dec, dec_eff,
               ips / (w * one) / dec_eff);
    if (w < max_workers && w * 2 > max_workers) w = max_workers / 2;  // end exactly on max_workers
  }
}

// Profiled / unprofiled img/s at max_workers, alternating, medians of 3; returns the unprofiled median.
double print_profiled_ratio(RunConfig c, int max_workers) {
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
  return median(off);
}

// N x one thread assumes N CPUs as fast as the one measured: the sum of the N fastest CPUs' own
// one-thread rates is the ceiling a loop of N independent threads can reach.
void print_per_cpu(const RunConfig& c, const DatasetIndex& index, StorageReader& storage, int n, int max_workers, double unprofiled, double one) {
  auto rates = per_cpu_rates(c, index, storage, std::min(n, 400));
  if (!rates.empty()) {
    std::sort(rates.begin(), rates.end(), [](auto& a, auto& b) { return a.second > b.second; });
    double sum = 0;
    const int used = std::min<int>(max_workers, static_cast<int>(rates.size()));
    for (int k = 0; k < used; ++k) sum += rates[static_cast<std::size_t>(k)].second;
    std::string by_cpu;
    for (auto& [cpu, r] : rates) by_cpu += fmt::format(" {}:{:.0f}", cpu, r);
    fmt::print("one thread pinned to each CPU (img/s, fastest first):{}\n", by_cpu);
    fmt::print("{} workers: {:.0f} img/s = {:.2f} x the sum of the {} fastest CPUs' one-thread rates ({:.0f} img/s; {:.2f} x {} x one thread)\n",
               max_workers, unprofiled, unprofiled / sum, used, sum, unprofiled / (max_workers * one), max_workers);
  }
}
}  // namespace

int main(int argc, char** argv) {
  std::string data;
  int max_workers = static_cast<int>(std::thread::hardware_concurrency());
  int steps = 30, batch = 128;
  CLI::App app{"pipeline_bench: decode-only ceiling, per-stage one-thread costs and the pipeline's img/s at 1..N workers"};
  app.add_option("--data", data, "an ImageFolder (default: the built-in dataset)")->check(CLI::ExistingDirectory);
  app.add_option("--max-workers", max_workers, "the most workers measured")->check(CLI::Range(1, 1024));
  app.add_option("--steps", steps, "batches per measurement")->check(CLI::Range(1, 1'000'000));
  app.add_option("--batch", batch, "images per batch")->check(CLI::Range(1, 65'536));
  CLI11_PARSE(app, argc, argv);
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

  // The files in memory, read once (the page cache warmed on the way).
  StorageReader storage(StorageKnobs{});
  const int n = std::min<int>(static_cast<int>(index.samples.size()), 2000);
  std::vector<std::vector<std::uint8_t>> files(static_cast<std::size_t>(n));
  double bytes = 0;
  for (int i = 0; i < n; ++i) {
    (void)storage.read(index.samples[static_cast<std::size_t>(i)].path, files[static_cast<std::size_t>(i)]);
    bytes += static_cast<double>(files[static_cast<std::size_t>(i)].size());
  }
  fmt::print("dataset {} ({} files, {:.1f} KB mean over the {} timed); batch {}, {} steps, float32 NCHW train transform\n", data,
             index.samples.size(), bytes / n / 1e3, n, batch, steps);
  const double ceiling_one = decode_only(files, 1);
  const double ceiling_n = decode_only(files, max_workers);
  fmt::print("decode-only ceiling (full-size decode from memory): 1 thread {:.0f} img/s, {} threads {:.0f} img/s\n", ceiling_one,
             max_workers, ceiling_n);

  print_stage_costs(c, index, storage, n);

  // One thread, the same per-sample code the workers run (page-cache reads included), over the files.
  (void)one_thread_rate(c, index, storage, 0, std::min(n, 64));  // warm the decoder
  const double one = one_thread_rate(c, index, storage, 0, n);
  fmt::print("one-thread decode + transform: {:.0f} img/s ({:.3f} ms/img; {:.2f}x the one-thread decode-only ceiling)\n", one, 1000.0 / one,
             one / ceiling_one);
  print_scaling(c, files, max_workers, one, ceiling_one);
  const double unprofiled = print_profiled_ratio(c, max_workers);
  print_per_cpu(c, index, storage, n, max_workers, unprofiled, one);
  return 0;
}
