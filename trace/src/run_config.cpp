#include "stalldx/run_config.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <limits>

namespace stalldx {

namespace {

constexpr std::array<std::string_view, 2> kOutputNames{"float32", "uint8"};
constexpr std::array<std::string_view, 2> kTransformNames{"train", "eval"};
constexpr std::array<std::string_view, 3> kDeviceNames{"auto", "cuda", "none"};
constexpr std::array<std::string_view, 2> kMemoryNames{"pinned", "pageable"};
constexpr std::array<std::string_view, 2> kCopyNames{"batch", "sample"};
constexpr std::array<std::string_view, 2> kBadSampleNames{"skip", "fail"};
constexpr std::array<std::string_view, 4> kCollectiveNames{"auto", "mpi", "nccl", "none"};

template <typename T>
struct MemberOf;
template <typename T>
struct MemberOf<T RunConfig::*> { using type = T; };

Status bad_value(const RunField& f, std::string_view text, std::string_view why) {
  return Status::invalid(fmt::format("--{} '{}': {}", f.option(), text, why));
}

std::string bounds_text(const RunField& f) {
  return fmt::format("must be in [{}, {}]", f.min, f.max);
}

// Text of one value, per member type.
template <auto M>
std::string get_value(const RunConfig& c) {
  using T = typename MemberOf<decltype(M)>::type;
  const T& v = c.*M;
  if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else if constexpr (std::is_same_v<T, std::string>) return v;
  else return fmt::format("{}", v);
}

template <auto M, const auto& Names>
std::string get_choice(const RunConfig& c) {
  return std::string(Names[static_cast<std::size_t>(c.*M)]);
}

template <auto M>
Status set_value(const RunField& f, RunConfig& c, std::string_view text) {
  using T = typename MemberOf<decltype(M)>::type;
  if constexpr (std::is_same_v<T, std::string>) {
    c.*M = std::string(text);
    return Status::ok();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (text == "true" || text == "1" || text == "on" || text == "yes") { c.*M = true; return Status::ok(); }
    if (text == "false" || text == "0" || text == "off" || text == "no") { c.*M = false; return Status::ok(); }
    return bad_value(f, text, "expected true or false");
  } else if constexpr (std::is_floating_point_v<T>) {
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) return bad_value(f, text, "not a number");
    if (!std::isfinite(v)) return bad_value(f, text, "must be a finite number");
    if (v < f.min || v > f.max) return bad_value(f, text, bounds_text(f));
    c.*M = v;
    return Status::ok();
  } else {
    using Wide = std::conditional_t<std::is_signed_v<T>, long long, unsigned long long>;
    Wide v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc::result_out_of_range) return bad_value(f, text, bounds_text(f));
    if (ec != std::errc() || end != text.data() + text.size()) return bad_value(f, text, "not an integer");
    if (static_cast<double>(v) < f.min || static_cast<double>(v) > f.max) return bad_value(f, text, bounds_text(f));
    c.*M = static_cast<T>(v);
    return Status::ok();
  }
}

template <auto M, const auto& Names>
Status set_choice(const RunField& f, RunConfig& c, std::string_view text) {
  using T = typename MemberOf<decltype(M)>::type;
  for (std::size_t i = 0; i < Names.size(); ++i)
    if (Names[i] == text) {
      c.*M = static_cast<T>(i);
      return Status::ok();
    }
  return bad_value(f, text, fmt::format("expected one of {}", fmt::join(Names, ", ")));
}

template <auto M>
constexpr FieldType type_of() {
  using T = typename MemberOf<decltype(M)>::type;
  if constexpr (std::is_same_v<T, bool>) return FieldType::boolean;
  else if constexpr (std::is_same_v<T, std::string>) return FieldType::text;
  else if constexpr (std::is_floating_point_v<T>) return FieldType::real;
  else if constexpr (std::is_unsigned_v<T>) return FieldType::unsigned_integer;
  else return FieldType::integer;
}

template <auto M>
constexpr RunField field(std::string_view name, std::string_view help, std::uint8_t use = kPlain, double min = 0, double max = 0) {
  return RunField{name, help, type_of<M>(), use, min, max, {}, &get_value<M>, &set_value<M>, &kRunMember<M>};
}
template <auto M, const auto& Names>
constexpr RunField choice(std::string_view name, std::string_view help, std::uint8_t use = kPlain) {
  return RunField{name, help, FieldType::choice, use, 0, 0, std::span<const std::string_view>(Names), &get_choice<M, Names>,
                  &set_choice<M, Names>, &kRunMember<M>};
}

constexpr double kU64Max = static_cast<double>(std::numeric_limits<std::uint64_t>::max());

const RunField kRunFields[] = {
    field<&RunConfig::data>("data", "ImageFolder root, manifest.tsv or file list (default: a built-in Food-101-like set, made once)"),
    field<&RunConfig::batch>("batch", "images per batch", kAlwaysShown, 1, 65536),
    field<&RunConfig::warmup>("warmup", "warm-up steps, reported apart", kAlwaysShown, 0, 100000),
    field<&RunConfig::steps>("steps", "steady-state steps", kAlwaysShown, 1, 10000000),
    field<&RunConfig::seed>("seed", "sampler and augmentation seed", kPlain, 0, kU64Max),
    field<&RunConfig::workers>("workers", "decode worker threads (oneTBB arena)", kAlwaysShown | kSweepAxis, 1, 1024),
    field<&RunConfig::prefetch>("prefetch", "batches prepared ahead of the consumer", kAlwaysShown | kSweepAxis, 1, 1024),
    choice<&RunConfig::transform, kTransformNames>("transform", "train (RandomResizedCrop + flip) or eval (resize + center crop)",
                                                   kAlwaysShown),
    choice<&RunConfig::output, kOutputNames>("output", "float32 (NCHW, ImageNet-normalized) or uint8 (NHWC)", kAlwaysShown),
    field<&RunConfig::size>("size", "output side in pixels", kAlwaysShown, 8, 4096),
    field<&RunConfig::dct_scaling>("dct_scaling", "decode at 1/2..1/8 scale when the region is >= 2x the target"),
    field<&RunConfig::roi_decode>("roi_decode", "decode only the crop's MCU rows/columns"),
    choice<&RunConfig::on_bad_sample, kBadSampleNames>("on_bad_sample", "skip (count, substitute another image) or fail"),
    field<&RunConfig::max_bad_fraction>("max_bad_fraction", "the run fails when more than this share of its images were substituted",
                                        kPlain, 0, 1),
    field<&RunConfig::read_latency_ms>("read_latency_ms", "extra latency per file read (slow storage; with cold_cache, per page-cache miss)", kPlain, 0, 10000),
    field<&RunConfig::read_bandwidth_mbps>("read_bandwidth_mbps", "read bandwidth cap in MB/s shared by all workers (0 = none, else >= 0.1)",
                                           kPlain, 0, 1e6),
    field<&RunConfig::cold_cache>("cold_cache", "drop each file's page cache before reading it; latency and bandwidth cap then apply to the reads that miss it", kFlag),
    field<&RunConfig::data_outside>("data_outside", "read manifest entries (absolute, with ..) and links that lead outside the dataset folder (refused and counted by default)", kFlag),
    field<&RunConfig::spike_every>("spike_every", "every N-th batch one file read is slow (0 = off)", kPlain, 0, 1000000),
    field<&RunConfig::spike_ms>("spike_ms", "extra latency of that slow read", kPlain, 0, 10000),
    field<&RunConfig::competing_threads>("competing_threads", "threads spinning beside the workers for the whole run (emulates a busy host)",
                                         kPlain, 0, 1024),
    choice<&RunConfig::device, kDeviceNames>("device", "cuda, none (host stand-in) or auto", kAlwaysShown),
    field<&RunConfig::step_ms>("step_ms", "host stand-in compute per step (--device none)", kPlain, 0, 10000),
    field<&RunConfig::device_ms>("device_ms", "synthetic GPU step time, calibrated at start-up (CUDA)", kPlain, 0, 2000),
    field<&RunConfig::step_kernels>("step_kernels", "kernel launches per synthetic step (its host launch work)", kPlain, 1, 100000),
    field<&RunConfig::inflight>("inflight", "device steps queued before the consumer blocks", kAlwaysShown, 1, 64),
    choice<&RunConfig::memory, kMemoryNames>("memory", "batch slot memory: pinned or pageable", kAlwaysShown),
    choice<&RunConfig::copy, kCopyNames>("copy", "one H2D copy per batch, or one per sample", kAlwaysShown),
    field<&RunConfig::pin_per_batch>("pin_per_batch", "pin (cudaHostRegister) each batch before its copy", kFlag),
    field<&RunConfig::sync_every_step>("sync_every_step", "cudaStreamSynchronize after every step", kFlag),
    field<&RunConfig::verify>("verify", "checksum every batch on host and device and compare", kFlag),
    field<&RunConfig::device_index>("device_index", "CUDA device ordinal", kPlain, 0, 1023),
    field<&RunConfig::rank>("rank", "this process's rank: set from MPI under mpirun/srun (alone: run that rank's shard)", kRunOnly, 0, 1 << 20),
    field<&RunConfig::world_size>("world_size", "ranks in the job: set from MPI under mpirun/srun (> 1: each rank a disjoint shard)",
                                  kRunOnly, 1, 1 << 20),
    field<&RunConfig::allreduce_mb>("allreduce_mb", "MB all-reduced after every step when world_size > 1 (default: ResNet-50's gradients "
                                    "in bf16; MPI_Allreduce on the host with --device none, NCCL on GPUs); 0 = none", kPlain, 0, 65536),
    choice<&RunConfig::collective, kCollectiveNames>("collective", "the step's all-reduce: auto (with world_size > 1: NCCL on a GPU, "
                                                     "MPI on host buffers with the stand-in), mpi, nccl (also alone: one rank), none"),
    field<&RunConfig::rank_override>("rank_override", "options for single ranks: 'R:option=value[,R:option=value]', "
                                     "e.g. 2:read-latency-ms=20 slows rank 2's reads", kRunOnly),
    field<&RunConfig::trace>("trace", "write a Chrome Trace JSON (opens in ui.perfetto.dev)", kNotCompared | kRunOnly),
    field<&RunConfig::profile>("profile", "record (default); --no-profile turns every collector off (uninstrumented throughput)",
                               kNegatedFlag | kNotCompared | kRunOnly),
    field<&RunConfig::cpu_time>("cpu_time", "record thread CPU time + run-queue delay on coarse ranges", kNotCompared),
    field<&RunConfig::nvtx_only>("nvtx_only", "emit NVTX ranges only, for an external profiler (stalldx record, Nsight Systems); record nothing in-process",
                                 kFlag | kNotCompared | kRunOnly),
};

template <typename E, std::size_t N>
const char* name_of(E v, const std::array<std::string_view, N>& names) {
  return names[static_cast<std::size_t>(v)].data();  // the literals are NUL-terminated
}

}  // namespace

Status apply_rank_overrides(RunConfig& c) {
  std::string_view rest = c.rank_override;
  RunConfig mine = c;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view entry = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const std::size_t colon = entry.find(':'), eq = entry.find('=');
    if (colon == std::string_view::npos || eq == std::string_view::npos || eq < colon)
      return Status::invalid(fmt::format("--rank-override '{}': expected RANK:option=value", entry));
    int r = -1;
    const std::string_view rank_text = entry.substr(0, colon);
    if (std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), r).ec != std::errc{} || r < 0 || r >= c.world_size)
      return Status::invalid(fmt::format("--rank-override '{}': '{}' is not a rank of this job (0..{})", entry, rank_text, c.world_size - 1));
    const std::string_view key = entry.substr(colon + 1, eq - colon - 1), value = entry.substr(eq + 1);
    const RunField* f = find_run_field(key);
    if (f == nullptr) return Status::invalid(fmt::format("--rank-override '{}': no option '{}'", entry, key));
    // Who the rank is, where it writes, and what makes the ranks meet: the same steps (they step
    // together: a rank with fewer would leave the others waiting) and the same all-reduce.
    for (std::string_view same : {"rank", "world_size", "rank_override", "trace", "warmup", "steps", "allreduce_mb", "collective"})
      if (f->name == same) return Status::invalid(fmt::format("--rank-override '{}': {} is the same for every rank", entry, f->option()));
    RunConfig probe = c;
    if (Status st = f->assign(probe, value); !st.is_ok()) return st.prefixed(fmt::format("--rank-override '{}'", entry));
    if (r == c.rank) (void)f->assign(mine, value);
  }
  c = mine;
  return Status::ok();
}

std::string RunField::option() const {
  std::string s(name);
  for (char& ch : s)
    if (ch == '_') ch = '-';
  return s;
}

std::span<const RunField> run_fields() { return kRunFields; }

const RunField* find_run_field_of(const void* member) {
  for (const RunField& f : run_fields())
    if (f.member == member) return &f;
  return nullptr;
}

const RunField* find_run_field(std::string_view name) {
  for (const RunField& f : kRunFields)
    if (f.name == name || f.option() == name) return &f;
  return nullptr;
}

const char* to_string(OutputFormat v) { return name_of(v, kOutputNames); }
const char* to_string(TransformKind v) { return name_of(v, kTransformNames); }
const char* to_string(DeviceKind v) { return name_of(v, kDeviceNames); }
const char* to_string(MemoryKind v) { return name_of(v, kMemoryNames); }
const char* to_string(CopyStyle v) { return name_of(v, kCopyNames); }
const char* to_string(BadSamplePolicy v) { return name_of(v, kBadSampleNames); }
const char* to_string(CollectiveKind v) { return name_of(v, kCollectiveNames); }

void to_meta(const RunConfig& c, std::map<std::string, std::string>& meta) {
  for (const RunField& f : kRunFields) meta[std::string(f.name)] = f.value(c);
}

bool from_meta(const std::map<std::string, std::string>& meta, RunConfig& c, std::vector<std::string>& problems) {
  bool any = false;
  for (const RunField& f : kRunFields) {
    auto it = meta.find(std::string(f.name));
    if (it == meta.end()) continue;
    any = true;
    if (Status st = f.assign(c, it->second); !st.is_ok())
      problems.push_back(fmt::format("metadata config '{}' = '{}' refused ({}); default {} used", f.name, it->second, st.message(),
                                     f.value(RunConfig{})));
  }
  return any;
}

std::string summary_line(const RunConfig& c) {
  static const RunConfig defaults{};
  std::string out;
  for (const RunField& f : kRunFields) {
    const std::string v = f.value(c);
    if (!f.has(kAlwaysShown) && v == f.value(defaults)) continue;
    if (!out.empty()) out += " | ";
    out += fmt::format("{} {}", f.option(), v.empty() ? "\"\"" : v);
  }
  return out;
}

std::string comparable_signature(const RunConfig& c) {
  std::string out;
  for (const RunField& f : kRunFields) {
    if (f.has(kSweepAxis) || f.has(kNotCompared)) continue;
    if (!out.empty()) out += ' ';
    out += fmt::format("{}={}", f.name, f.value(c));
  }
  return out;
}

std::size_t sample_bytes(const RunConfig& c) {
  const std::size_t px = static_cast<std::size_t>(c.size) * c.size * 3;
  return c.output == OutputFormat::float32_nchw ? px * sizeof(float) : px;
}
std::size_t batch_bytes(const RunConfig& c) { return sample_bytes(c) * static_cast<std::size_t>(c.batch); }

}  // namespace stalldx
