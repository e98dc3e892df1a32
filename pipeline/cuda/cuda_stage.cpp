// The CUDA stage: pinned batch slots (allocated once), one cudaMemcpyAsync per batch on a non-blocking
// copy stream into a ring of device buffers, the compute stream waiting on each copy's event, a
// calibrated synthetic model step, an in-flight limit, and the knobs that reproduce submission stalls.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "stalldx/stage/device_stage.h"
#include "kernels.h"
#include "stalldx/cuda.h"
#include "stalldx/profiler.h"

namespace stalldx::pipeline {

namespace {

#define STALLDX_CUDA_TRY(expr)                                                                              \
  do {                                                                                                      \
    const cudaError_t stalldx_err = (expr);                                                                 \
    if (stalldx_err != cudaSuccess)                                                                         \
      return Status::unavailable(fmt::format("CUDA error in {}: {}", #expr, cudaGetErrorString(stalldx_err))); \
  } while (0)

class PinnedAllocator final : public SlotAllocator {
 public:
  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    return cudaHostAlloc(&p, bytes, cudaHostAllocDefault) == cudaSuccess ? p : nullptr;
  }
  void release(void* p, std::size_t) noexcept override { cudaFreeHost(p); }
  const char* kind() const override { return "pinned"; }
};

class CudaStage final : public DeviceStage {
 public:
  explicit CudaStage(const RunConfig& c) : c_(c) {}
  ~CudaStage() override {
    cudaDeviceSynchronize();
    for (void* p : dev_) cudaFree(p);
    cudaFree(scratch_);
    cudaFree(sink_);
    cudaFree(sums_);
    for (auto* v : {&copy_start_, &copy_done_, &step_done_})
      for (cudaEvent_t e : *v) cudaEventDestroy(e);
    for (cudaEvent_t e : steady_)
      if (e) cudaEventDestroy(e);
    if (copy_) cudaStreamDestroy(copy_);
    if (compute_) cudaStreamDestroy(compute_);
  }

  Status init() {
    STALLDX_CUDA_TRY(cudaSetDevice(c_.device_index));
    cudaDeviceProp prop{};
    STALLDX_CUDA_TRY(cudaGetDeviceProperties(&prop, c_.device_index));
    sms_ = prop.multiProcessorCount;
    stats_.description = fmt::format("{} (cuda:{}, {} SMs)", prop.name, c_.device_index, sms_);
    stats_.standin = false;
    STALLDX_CUDA_TRY(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
    STALLDX_CUDA_TRY(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
    bytes_ = batch_bytes(c_);
    ring_ = c_.inflight + 1;
    dev_.assign(static_cast<std::size_t>(ring_), nullptr);
    for (void*& p : dev_) STALLDX_CUDA_TRY(cudaMalloc(&p, bytes_));
    if (c_.output == OutputFormat::uint8_nhwc)
      STALLDX_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&scratch_), static_cast<std::size_t>(c_.batch) * 3 * c_.size * c_.size * sizeof(float)));
    STALLDX_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&sink_), 1024 * sizeof(float)));
    const int total = c_.warmup + c_.steps;
    STALLDX_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&sums_), static_cast<std::size_t>(total) * sizeof(unsigned long long)));
    STALLDX_CUDA_TRY(cudaMemset(sums_, 0, static_cast<std::size_t>(total) * sizeof(unsigned long long)));
    for (auto* v : {&copy_start_, &copy_done_}) {
      v->assign(static_cast<std::size_t>(ring_), nullptr);
      for (cudaEvent_t& e : *v) STALLDX_CUDA_TRY(cudaEventCreate(&e));
    }
    step_done_.assign(static_cast<std::size_t>(c_.inflight), nullptr);
    for (cudaEvent_t& e : step_done_) STALLDX_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    ring_step_.assign(static_cast<std::size_t>(ring_), -1);
    if (Status st = calibrate(); !st.is_ok()) return st;
    if (Status st = measure_reference_copy(); !st.is_ok()) return st;
    const bool pinned_slots = c_.memory == MemoryKind::pinned && !c_.pin_per_batch;
    allocator_ = pinned_slots ? std::unique_ptr<SlotAllocator>(new PinnedAllocator()) : make_pageable_allocator();
    if (c_.pin_per_batch) stats_.notes.push_back("slots are pageable and pinned/unpinned around every batch's copy (--pin-per-batch)");
    if (c_.memory == MemoryKind::pageable && !c_.pin_per_batch) stats_.notes.push_back("slots are PAGEABLE host memory (--memory pageable)");
    host_sums_.reserve(static_cast<std::size_t>(total));
    return Status::ok();
  }

  SlotAllocator& allocator() override { return *allocator_; }
  int extra_slots() const override { return 1; }  // a released slot may still be read by its copy
  Status install_collectors(Session& session) override { return stalldx::cuda::install(session); }

  Status submit_step(std::int64_t step, BatchSlot& slot, std::uint64_t host_sum, std::function<void()>& fence) override {
    const RangeIds ids{step, slot.batch, -1};
    if (step >= c_.inflight) {  // in-flight limit: as a framework does, block while `inflight` steps are queued
      STALLDX_RANGE(sync, "inflight_wait", ids);
      STALLDX_CUDA_TRY(cudaEventSynchronize(step_done_[static_cast<std::size_t>(step % c_.inflight)]));
    }
    const auto r = static_cast<std::size_t>(step % ring_);
    account_copy(r);
    {
      STALLDX_RANGE(submit, "submit_batch", ids);
      if (c_.pin_per_batch) STALLDX_CUDA_TRY(cudaHostRegister(slot.data, slot.bytes, cudaHostRegisterDefault));
      STALLDX_CUDA_TRY(cudaEventRecord(copy_start_[r], copy_));
      if (c_.copy == CopyStyle::batch) {
        STALLDX_CUDA_TRY(cudaMemcpyAsync(dev_[r], slot.data, bytes_, cudaMemcpyHostToDevice, copy_));
      } else {
        const std::size_t sb = sample_bytes(c_);
        for (int i = 0; i < c_.batch; ++i)
          STALLDX_CUDA_TRY(cudaMemcpyAsync(static_cast<std::uint8_t*>(dev_[r]) + i * sb, slot.data + i * sb, sb,
                                           cudaMemcpyHostToDevice, copy_));
      }
      STALLDX_CUDA_TRY(cudaEventRecord(copy_done_[r], copy_));
      if (c_.pin_per_batch) {
        STALLDX_CUDA_TRY(cudaEventSynchronize(copy_done_[r]));
        STALLDX_CUDA_TRY(cudaHostUnregister(slot.data));
      }
      STALLDX_CUDA_TRY(cudaStreamWaitEvent(compute_, copy_done_[r], 0));
      if (host_sum != 0 || c_.verify) {
        STALLDX_CUDA_TRY(cuda::launch_checksum(dev_[r], bytes_, sums_ + step, compute_));
        host_sums_.push_back(host_sum);
      }
      const float* input = static_cast<const float*>(dev_[r]);
      if (c_.output == OutputFormat::uint8_nhwc) {
        STALLDX_CUDA_TRY(cuda::launch_normalize(static_cast<const std::uint8_t*>(dev_[r]), scratch_, c_.batch, c_.size, compute_));
        input = scratch_;
      }
      if (Status st = launch_step(input, iters_); !st.is_ok()) return st;
      STALLDX_CUDA_TRY(cudaEventRecord(step_done_[static_cast<std::size_t>(step % c_.inflight)], compute_));
    }
    ring_step_[r] = step;
    if (c_.sync_every_step) {
      STALLDX_RANGE(sync, "sync_every_step", ids);
      STALLDX_CUDA_TRY(cudaStreamSynchronize(compute_));
    }
    cudaEvent_t done = copy_done_[r];
    fence = [done] { cudaEventSynchronize(done); };  // the slot is free once its copy has completed
    return Status::ok();
  }

  Status drain() override {
    STALLDX_CUDA_TRY(cudaStreamSynchronize(compute_));
    STALLDX_CUDA_TRY(cudaStreamSynchronize(copy_));
    return Status::ok();
  }

  // An event after the warm-up's work on the compute stream (each step's compute waits for its copy):
  // the steady time is measured from its completion, and the consumer does not wait for it.
  Status steady_begins() override {
    for (cudaEvent_t& e : steady_)
      if (!e) STALLDX_CUDA_TRY(cudaEventCreate(&e));
    STALLDX_CUDA_TRY(cudaEventRecord(steady_[0], compute_));
    steady_marked_ = true;
    return Status::ok();
  }

  Status finish() override {
    if (steady_marked_) STALLDX_CUDA_TRY(cudaEventRecord(steady_[1], compute_));
    if (Status st = drain(); !st.is_ok()) return st;
    float steady_ms = 0;
    if (steady_marked_ && cudaEventElapsedTime(&steady_ms, steady_[0], steady_[1]) == cudaSuccess) steady_s_ = steady_ms / 1e3;
    for (std::size_t r = 0; r < ring_step_.size(); ++r) account_copy(r);
    stats_.batch_copy_gbps = copy_ms_ > 0 ? static_cast<double>(copy_bytes_) / (copy_ms_ * 1e6) : 0;
    if (!host_sums_.empty()) {
      std::vector<unsigned long long> dev(host_sums_.size());
      STALLDX_CUDA_TRY(cudaMemcpy(dev.data(), sums_, dev.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
      for (std::size_t i = 0; i < dev.size(); ++i) {
        stats_.verified_batches++;
        if (dev[i] != host_sums_[i]) stats_.checksum_mismatches++;
      }
      if (stats_.checksum_mismatches)
        stats_.notes.push_back(fmt::format("CHECKSUM MISMATCH on {} of {} batches: a slot was overwritten in flight",
                                           stats_.checksum_mismatches, dev.size()));
    }
    return Status::ok();
  }

  DeviceStats stats() const override { return stats_; }
  double steady_device_seconds() const override { return steady_s_; }
  void* cuda_stream() const override { return compute_; }
  void append_records(Trace&) const override {}  // device records come from CUPTI

 private:
  std::size_t floats() const { return static_cast<std::size_t>(c_.batch) * 3 * c_.size * c_.size; }

  // Adds the finished copy last made from ring entry r to the steady-state bandwidth figure.
  void account_copy(std::size_t r) {
    const std::int64_t s = ring_step_[r];
    if (s < 0) return;
    ring_step_[r] = -1;
    if (s < c_.warmup) return;
    float ms = 0;
    if (cudaEventSynchronize(copy_done_[r]) == cudaSuccess && cudaEventElapsedTime(&ms, copy_start_[r], copy_done_[r]) == cudaSuccess) {
      copy_ms_ += ms;
      copy_bytes_ += bytes_;
    }
  }

  // The synthetic step as --step-kernels launches (a model is hundreds of kernels): the first reads the
  // whole batch, the rest carry the compute; `iters` is the total FMA rounds, split evenly.
  Status launch_step(const float* input, int iters) {
    const int k = c_.step_kernels;
    for (int i = 0; i < k; ++i)
      STALLDX_CUDA_TRY(cuda::launch_synthetic_step(input, i == 0 ? floats() : 0, iters / k + (i < iters % k ? 1 : 0), sink_, sms_, compute_));
    return Status::ok();
  }

  // Mean milliseconds of `reps` runs of `enqueue` on `stream` (after one untimed warm run), by events.
  template <typename Enqueue>
  Status time_on(cudaStream_t stream, int reps, Enqueue&& enqueue, double& ms_out) {
    cudaEvent_t ev[2] = {nullptr, nullptr};
    auto done = [&](Status st) {
      for (cudaEvent_t e : ev)
        if (e) cudaEventDestroy(e);
      return st;
    };
    for (cudaEvent_t& e : ev)
      if (cudaEventCreate(&e) != cudaSuccess) return done(Status::unavailable("cudaEventCreate failed"));
    if (Status st = enqueue(); !st.is_ok()) return done(st);
    if (cudaEventRecord(ev[0], stream) != cudaSuccess) return done(Status::unavailable("cudaEventRecord failed"));
    for (int i = 0; i < reps; ++i)
      if (Status st = enqueue(); !st.is_ok()) return done(st);
    float ms = 0;
    const cudaError_t err = cudaEventRecord(ev[1], stream) == cudaSuccess && cudaEventSynchronize(ev[1]) == cudaSuccess
                                ? cudaEventElapsedTime(&ms, ev[0], ev[1])
                                : cudaGetLastError();
    if (err != cudaSuccess) return done(Status::unavailable(fmt::format("CUDA timing failed: {}", cudaGetErrorString(err))));
    ms_out = ms / reps;
    return done(Status::ok());
  }

  Status time_step(int iters, double& ms_out) {
    // The step reads float32 NCHW: the batch buffer itself, or the normalized scratch for uint8 batches.
    const float* input = scratch_ != nullptr ? scratch_ : static_cast<const float*>(dev_[0]);
    return time_on(compute_, 3, [&] { return launch_step(input, iters); }, ms_out);
  }

  // Scales the FMA loop so one step takes --device-ms on this device; reports what was reached.
  Status calibrate() {
    STALLDX_CUDA_TRY(cudaMemset(dev_[0], 0, bytes_));
    if (scratch_ != nullptr) STALLDX_CUDA_TRY(cudaMemset(scratch_, 0, floats() * sizeof(float)));
    double base = 0;
    if (Status st = time_step(0, base); !st.is_ok()) return st;  // reading the batch alone
    const int probe = 1 << 14;
    double t = 0;
    if (Status st = time_step(probe, t); !st.is_ok()) return st;
    const double per_iter = std::max(1e-9, (t - base) / probe);
    iters_ = c_.device_ms <= base ? 0 : static_cast<int>(std::min(2e9, (c_.device_ms - base) / per_iter));
    for (int refine = 0; refine < 2; ++refine) {
      if (Status st = time_step(iters_, t); !st.is_ok()) return st;
      if (t > base && c_.device_ms > base) iters_ = static_cast<int>(std::min(2e9, iters_ * (c_.device_ms - base) / (t - base)));
    }
    if (Status st = time_step(iters_, t); !st.is_ok()) return st;
    stats_.calibrated_step_ms = t;
    // Too many kernels (their launches alone), or a batch read longer than the step: the requested time
    // cannot be reached. Said at start-up with the reachable time, never called calibrated.
    stats_.step_reached = std::abs(t - c_.device_ms) <= std::max(0.5, 0.05 * c_.device_ms);
    if (!stats_.step_reached)
      stats_.notes.push_back(fmt::format("--device-ms {} cannot be reached on this device: the step takes {:.2f} ms with {} kernel launches "
                                         "(reading the batch alone: {:.2f} ms){}",
                                         c_.device_ms, t, c_.step_kernels, base,
                                         t > c_.device_ms ? "; fewer --step-kernels, or a longer --device-ms" : ""));
    return Status::ok();
  }

  // A plain pinned cudaMemcpyAsync of one batch, timed with events: the run's bandwidth reference.
  Status measure_reference_copy() {
    void* host = nullptr;
    STALLDX_CUDA_TRY(cudaHostAlloc(&host, bytes_, cudaHostAllocDefault));
    std::fill_n(static_cast<std::uint8_t*>(host), bytes_, std::uint8_t{1});
    double ms = 0;
    const Status st = time_on(copy_, 5, [&] {
      const cudaError_t e = cudaMemcpyAsync(dev_[0], host, bytes_, cudaMemcpyHostToDevice, copy_);
      return e == cudaSuccess ? Status::ok() : Status::unavailable(fmt::format("cudaMemcpyAsync: {}", cudaGetErrorString(e)));
    }, ms);
    cudaFreeHost(host);
    if (!st.is_ok()) return st;
    stats_.reference_copy_gbps = ms > 0 ? static_cast<double>(bytes_) / (ms * 1e6) : 0;
    return Status::ok();
  }

  RunConfig c_;
  DeviceStats stats_;
  std::unique_ptr<SlotAllocator> allocator_;
  cudaStream_t copy_ = nullptr, compute_ = nullptr;
  std::vector<void*> dev_;
  float* scratch_ = nullptr;
  float* sink_ = nullptr;
  unsigned long long* sums_ = nullptr;
  std::vector<cudaEvent_t> copy_start_, copy_done_, step_done_;
  cudaEvent_t steady_[2] = {nullptr, nullptr};  // after the warm-up's work, after the last step's
  bool steady_marked_ = false;
  double steady_s_ = -1;                        // between their completions (finish())
  std::vector<std::int64_t> ring_step_;
  std::vector<std::uint64_t> host_sums_;
  std::size_t bytes_ = 0;
  int ring_ = 0, sms_ = 1, iters_ = 0;
  double copy_ms_ = 0;
  std::uint64_t copy_bytes_ = 0;
};

}  // namespace

Status make_cuda_stage(const RunConfig& config, std::unique_ptr<DeviceStage>& out) {
  auto stage = std::make_unique<CudaStage>(config);
  if (Status st = stage->init(); !st.is_ok()) return st;
  out = std::move(stage);
  return Status::ok();
}

bool cuda_device_present(std::string& why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    why = cudaGetErrorString(err);
    return false;
  }
  if (n == 0) {
    why = "the CUDA runtime reports no device";
    return false;
  }
  return true;
}

}  // namespace stalldx::pipeline
