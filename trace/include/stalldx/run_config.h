// The reference pipeline's run options — every option of `stalldx run` and of each sweep point — and
// the field table that is the only place an option is declared. Everything else is generated from the
// table: CLI11 options and TOML keys (cli/), the trace metadata (and reading it back in diagnose/), the
// JSON report, the one-line summary and the sweep's resume signature. A trace carries its run's config,
// so this lives in the trace library: diagnose/ reads it typed, without the pipeline.
//
// Units are in the names (ms, mbps = MB/s). Adding an option = a member here + a row in kRunFields
// (run_config.cpp); the tests fail when a row is missing anywhere.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stalldx/status.h"

namespace stalldx {

enum class OutputFormat { float32_nchw, uint8_nhwc };
enum class TransformKind { train, eval };
enum class DeviceKind { auto_detect, cuda, none };
enum class MemoryKind { pinned, pageable };
enum class CopyStyle { batch, sample };
enum class BadSamplePolicy { skip, fail };
enum class CollectiveKind { auto_select, mpi, nccl, none };

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
  double max_bad_fraction = 0.1;       // the run fails when more than this share of its images were substituted
  // storage knobs (each off at 0/false)
  double read_latency_ms = 0;          // fixed extra latency per file read
  double read_bandwidth_mbps = 0;      // cap in MB/s shared by all workers
  bool cold_cache = false;             // posix_fadvise(DONTNEED) before each read
  bool data_outside = false;           // read manifest entries and links leading outside the dataset folder
  int spike_every = 0;                 // every N-th batch, one file read takes spike_ms longer
  double spike_ms = 0;
  int competing_threads = 0;           // threads spinning beside the workers for the whole run (a busy host)
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
  int device_index = 0;                // CUDA device ordinal
  // ranks (an MPI job: one pipeline per rank; ranks.h)
  int rank = 0;                        // this process's rank (set from MPI)
  int world_size = 1;                  // ranks in the job (set from MPI); > 1: a disjoint shard per rank
  double allreduce_mb = 51.2;          // all-reduce after every step when world_size > 1 (ResNet-50's gradients in bf16); 0 = none
  CollectiveKind collective = CollectiveKind::auto_select;  // auto: with world_size > 1, NCCL on a GPU, MPI with the stand-in
  std::string rank_override;           // "R:option=value[,R:option=value...]": options for one rank only
  // profiling
  std::string trace;                   // write a trace here ("" = none)
  bool profile = true;                 // false = --no-profile: every collector off
  bool cpu_time = true;
  bool nvtx_only = false;              // NVTX ranges for an external profiler, nothing recorded in-process
};

enum class FieldType : std::uint8_t { integer, unsigned_integer, real, boolean, text, choice };

// How a field takes part beyond the plain option (bit set).
enum FieldUse : std::uint8_t {
  kPlain = 0,
  kFlag = 1,            // CLI: a flag without a value (TOML: key = true/false)
  kNegatedFlag = 2,     // CLI: --no-<key> clears it (profile)
  kSweepAxis = 4,       // a sweep lists its own values (workers, prefetch): not a sweep option, not in its signature
  kNotCompared = 8,     // does not change what is measured (the trace path, profiling): not in the resume signature
  kAlwaysShown = 16,    // the one-line summary shows it even at its default
  kRunOnly = 32,        // only `run` takes it (trace path, profiling): a sweep sets these per point itself
};

struct RunField {
  std::string_view name;     // metadata / JSON key (snake_case); CLI option and TOML key: '-' for '_'
  std::string_view help;
  FieldType type;
  std::uint8_t use;          // FieldUse bits
  double min, max;           // inclusive bounds of numeric fields (refused outside, and NaN/inf always)
  std::span<const std::string_view> choices;  // choice fields: the names, in enum order
  std::string (*get_)(const RunConfig&);
  Status (*set_)(const RunField&, RunConfig&, std::string_view);
  const void* member = nullptr;  // &kRunMember<&RunConfig::x>: which member it is, for run_field<M>()

  // The value as text, in the form assign() parses ("30", "0.5", "true", "uint8").
  std::string value(const RunConfig& c) const { return get_(c); }
  // Parses and range-checks one value; on error `c` is unchanged and the message names the option.
  Status assign(RunConfig& c, std::string_view text) const { return set_(*this, c, text); }
  std::string option() const;                 // "read-latency-ms"
  bool has(FieldUse u) const { return (use & u) != 0; }
};

// Every run option, in the order help and reports list them.
std::span<const RunField> run_fields();
const RunField* find_run_field(std::string_view name);  // by name or option spelling; nullptr if none

// One address per RunConfig member (an inline variable: the same in every translation unit).
template <auto M>
inline constexpr char kRunMember = 0;
const RunField* find_run_field_of(const void* member);
// The field of a member, by type rather than by its key's text: run_field<&RunConfig::workers>().
template <auto M>
const RunField& run_field() {
  static const RunField* f = find_run_field_of(&kRunMember<M>);
  return *f;  // every member used this way is in the table (run_config_test checks each)
}

const char* to_string(OutputFormat v);
const char* to_string(TransformKind v);
const char* to_string(DeviceKind v);
const char* to_string(MemoryKind v);
const char* to_string(CopyStyle v);
const char* to_string(BadSamplePolicy v);
const char* to_string(CollectiveKind v);

// The config as metadata (every field, name -> text).
void to_meta(const RunConfig& c, std::map<std::string, std::string>& meta);
// A config back from metadata; fields that are absent keep their defaults. Values that do not parse are
// refused: each adds "key: why" to `problems` (and keeps the default). Returns true when any run field
// was present (a trace of the reference pipeline).
bool from_meta(const std::map<std::string, std::string>& meta, RunConfig& c, std::vector<std::string>& problems);
// docs/configuration.md: every field as a Markdown table (option, value kind and range, default, help).
std::string run_config_reference();
// "batch 128 | workers 4 | ...": the fields marked kAlwaysShown, then every other field that differs
// from its default.
std::string summary_line(const RunConfig& c);
// Every field that changes what a sweep point measures (not the axes, not kNotCompared), "k=v" joined by
// spaces: two sweeps may share a CSV only when these are equal.
std::string comparable_signature(const RunConfig& c);

// Applies `c.rank_override` ("R:option=value,...") to `c`: the entries for c.rank, in order. Every entry
// is checked whatever its rank (syntax, a known option, a value it accepts, R < world_size), so a bad
// one fails every rank alike; rank, world_size, rank_override, trace, warmup, steps, allreduce_mb and
// collective cannot be overridden (the ranks step together and meet in the same all-reduce).
Status apply_rank_overrides(RunConfig& c);

// Bytes of one sample / one batch in the configured output format.
std::size_t batch_bytes(const RunConfig& c);
std::size_t sample_bytes(const RunConfig& c);

}  // namespace stalldx
