#include "run_options.h"

#include <map>
#include <string>

namespace stalldx::cli {

using namespace stalldx::pipeline;

void add_run_options(CLI::App& app, RunConfig& c, bool pipeline_only) {
  app.add_option("--data", c.data, "ImageFolder root, manifest.tsv or file list (default: a built-in Food-101-like set, made once)");
  app.add_option("--batch", c.batch, "images per batch")->capture_default_str();
  app.add_option("--warmup", c.warmup, "warm-up steps, reported apart")->capture_default_str();
  app.add_option("--steps", c.steps, "steady-state steps")->capture_default_str();
  app.add_option("--seed", c.seed, "sampler and augmentation seed")->capture_default_str();
  if (!pipeline_only) {
    app.add_option("--workers", c.workers, "decode worker threads (oneTBB arena)")->capture_default_str();
    app.add_option("--prefetch", c.prefetch, "batches prepared ahead of the consumer")->capture_default_str();
  }
  app.add_option("--transform", c.transform, "train (RandomResizedCrop + flip) or eval (resize + center crop)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, TransformKind>{{"train", TransformKind::train}, {"eval", TransformKind::eval}}))
      ->default_str("train");
  app.add_option("--output", c.output, "float32 (NCHW, ImageNet-normalized) or uint8 (NHWC)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, OutputFormat>{{"float32", OutputFormat::float32_nchw}, {"uint8", OutputFormat::uint8_nhwc}}))
      ->default_str("float32");
  app.add_option("--size", c.size, "output side in pixels")->capture_default_str();
  app.add_option("--dct-scaling", c.dct_scaling, "decode at 1/2..1/8 scale when the region is >= 2x the target")->capture_default_str();
  app.add_option("--roi-decode", c.roi_decode, "decode only the crop's MCU rows/columns")->capture_default_str();
  app.add_option("--on-bad-sample", c.on_bad_sample, "skip (count, substitute) or fail")
      ->transform(CLI::CheckedTransformer(std::map<std::string, BadSamplePolicy>{{"skip", BadSamplePolicy::skip}, {"fail", BadSamplePolicy::fail}}))
      ->default_str("skip");
  app.add_option("--read-latency-ms", c.read_latency_ms, "extra latency per file read (slow storage)")->capture_default_str();
  app.add_option("--read-bandwidth-mbps", c.read_bandwidth_mbps, "read bandwidth cap in MB/s shared by all workers (0 = none)")->capture_default_str();
  app.add_flag("--cold-cache", c.cold_cache, "drop each file's page cache before reading it");
  app.add_option("--spike-every", c.spike_every, "every N-th batch one file read is slow (0 = off)")->capture_default_str();
  app.add_option("--spike-ms", c.spike_ms, "extra latency of that slow read")->capture_default_str();
  app.add_option("--device", c.device, "cuda, none (host stand-in) or auto")
      ->transform(CLI::CheckedTransformer(std::map<std::string, DeviceKind>{{"auto", DeviceKind::auto_detect}, {"cuda", DeviceKind::cuda}, {"none", DeviceKind::none}}))
      ->default_str("auto");
  app.add_option("--step-ms", c.step_ms, "host stand-in compute per step (--device none)")->capture_default_str();
  app.add_option("--device-ms", c.device_ms, "synthetic GPU step time, calibrated at start-up (CUDA)")->capture_default_str();
  app.add_option("--step-kernels", c.step_kernels, "kernel launches per synthetic step (its host launch work)")->capture_default_str();
  app.add_option("--inflight", c.inflight, "device steps queued before the consumer blocks")->capture_default_str();
  app.add_option("--memory", c.memory, "batch slot memory: pinned or pageable")
      ->transform(CLI::CheckedTransformer(std::map<std::string, MemoryKind>{{"pinned", MemoryKind::pinned}, {"pageable", MemoryKind::pageable}}))
      ->default_str("pinned");
  app.add_option("--copy", c.copy, "one H2D copy per batch, or one per sample")
      ->transform(CLI::CheckedTransformer(std::map<std::string, CopyStyle>{{"batch", CopyStyle::batch}, {"sample", CopyStyle::sample}}))
      ->default_str("batch");
  app.add_flag("--pin-per-batch", c.pin_per_batch, "pin (cudaHostRegister) each batch before its copy");
  app.add_flag("--sync-every-step", c.sync_every_step, "cudaStreamSynchronize after every step");
  app.add_flag("--verify", c.verify, "checksum every batch on host and device and compare");
  app.add_option("--cpu-time", c.cpu_time, "record thread CPU time + context switches on coarse ranges")->capture_default_str();
  if (!pipeline_only) {
    app.add_option("--trace", c.trace, "write a Chrome Trace JSON (opens in ui.perfetto.dev)");
    app.add_flag("!--no-profile", c.profile, "turn every collector off (uninstrumented throughput)");
  }
}

}  // namespace stalldx::cli
