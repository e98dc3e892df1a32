// Every option of `stalldx run` (and of each sweep point). CLI11 binds flags and TOML keys to these
// fields in cli/; the pipeline reads them. Units are in the names.
#pragma once

#include <cstdint>
#include <string>

namespace stalldx::pipeline {

enum class OutputFormat { float32_nchw, uint8_nhwc };
enum class TransformKind { train, eval };
enum class DeviceKind { auto_detect, cuda, none };
enum class MemoryKind { pinned, pageable };
enum class CopyStyle { batch, sample };
enum class BadSamplePolicy { skip, fail };

struct RunConfig {
  // data
  std::string data;                    // ImageFolder root, manifest (.tsv) or file list; empty = built-in default set
  int batch = 128;
  int warmup = 3;
  int steps = 20;
  std::uint64_t seed = 1;
  // workers
  int workers = 4;
  int prefetch = 2;                    // batches ready ahead of the consumer
  // transforms
  TransformKind transform = TransformKind::train;
  OutputFormat output = OutputFormat::float32_nchw;
  int size = 224;
  bool dct_scaling = true;             // decode at 1/2, 1/4, 1/8 when the source region is >= 2x the target
  bool roi_decode = true;              // decode only the crop's rows and MCU columns
  BadSamplePolicy on_bad_sample = BadSamplePolicy::skip;
  // storage knobs (each off at 0/false)
  double read_latency_ms = 0;          // fixed extra latency per file read
  double read_bandwidth_mbps = 0;      // cap in MB/s shared by all workers
  bool cold_cache = false;             // posix_fadvise(DONTNEED) before each read
  int spike_every = 0;                 // every N-th batch, one file read takes spike_ms longer
  double spike_ms = 0;
  // consumer / device
  DeviceKind device = DeviceKind::auto_detect;
  double step_ms = 30;                 // host stand-in compute per step (--device none)
  double device_ms = 30;               // synthetic device step time (CUDA)
  int inflight = 2;                    // queued device steps before the consumer blocks
  int step_kernels = 50;               // kernel launches the synthetic step is split into (host launch work)
  MemoryKind memory = MemoryKind::pinned;
  CopyStyle copy = CopyStyle::batch;
  bool pin_per_batch = false;          // cudaHostRegister/Unregister around every batch's copy
  bool sync_every_step = false;        // cudaStreamSynchronize after each step
  bool verify = false;                 // checksum every batch on host and device and compare
  // profiling
  std::string trace;                   // write a trace here ("" = none)
  bool profile = true;                 // false = --no-profile: every collector off
  bool cpu_time = true;
  int device_index = 0;
};

const char* to_string(OutputFormat v);
const char* to_string(TransformKind v);
const char* to_string(DeviceKind v);
const char* to_string(MemoryKind v);
const char* to_string(CopyStyle v);
const char* to_string(BadSamplePolicy v);

// Bytes of one batch in the configured output format.
std::size_t batch_bytes(const RunConfig& c);
std::size_t sample_bytes(const RunConfig& c);

}  // namespace stalldx::pipeline
