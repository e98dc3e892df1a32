// The consumer's device side: what happens to a finished batch each step. Two implementations, chosen
// by CMake and at run time: the CUDA stage (pinned slots, H2D copy, synthetic GPU step) and the host
// stand-in for --device none (spends --step-ms of compute on the consumer thread, labelled as such).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stalldx/stage/batch_pool.h"
#include "stalldx/run_config.h"
#include "stalldx/profiler.h"
#include "stalldx/status.h"
#include "stalldx/trace_model.h"

namespace stalldx::pipeline {

struct DeviceStats {
  std::string description;          // "host stand-in (no device)" or "NVIDIA H200 (cuda:0)"
  bool standin = true;
  double calibrated_step_ms = 0;    // synthetic device step as calibrated on this device
  bool step_reached = true;         // false: the requested step time could not be reached (see notes)
  double batch_copy_gbps = 0;       // measured H2D bandwidth of this run's batch copies
  double reference_copy_gbps = 0;   // plain pinned cudaMemcpyAsync of the same size, same run
  std::uint64_t verified_batches = 0, checksum_mismatches = 0;
  std::vector<std::string> notes;
};

class DeviceStage {
 public:
  virtual ~DeviceStage() = default;
  virtual SlotAllocator& allocator() = 0;
  virtual int extra_slots() const = 0;       // slots in flight beyond prefetch + the consumer's one
  // Adds the collectors of this stage's device (CUPTI + NVTX for CUDA) to `session`, before it starts.
  virtual Status install_collectors(Session&) { return Status::ok(); }
  // Hands step `step`'s batch to the device (or the stand-in). Sets `fence` to what must complete
  // before the slot may be overwritten (empty = immediately reusable). `host_sum` is the host checksum
  // when --verify, else 0.
  virtual Status submit_step(std::int64_t step, BatchSlot& slot, std::uint64_t host_sum, std::function<void()>& fence) = 0;
  virtual Status drain() = 0;                // waits for all submitted work
  // The steady steps begin: the work submitted so far (the warm-up's) is not theirs. The default waits
  // for it (drain) and the run's time starts on the host's clock; a stage that times its device itself
  // marks the point without waiting (a wait there idles the device into the first steady step).
  virtual Status steady_begins() { return drain(); }
  virtual Status finish() = 0;               // drains, then settles the figures (bandwidth, checksums); once
  // After finish(): seconds from when the device completed the warm-up's work to when it completed the
  // last step's (steady_begins() to finish()), by the device's own timing; < 0 when the stage does not
  // time it (the run then takes the host's clock from steady_begins()'s return to finish()'s).
  virtual double steady_device_seconds() const { return -1; }
  virtual DeviceStats stats() const = 0;
  // The CUDA stream (a cudaStream_t) the steps' compute is queued on, for device work that must follow
  // a step and precede the next (a rank's all-reduce); owned by the stage, valid while it lives. Null
  // for the host stand-in.
  virtual void* cuda_stream() const { return nullptr; }
  // Device-side records this stage produced itself (the stand-in's compute lane); CUPTI records arrive
  // through the profiler instead.
  virtual void append_records(Trace& trace) const = 0;
};

// Most extra_slots() any stage asks for (the CUDA stage: 1), for sizing checks before a stage exists.
inline constexpr int kMaxExtraSlots = 1;
// Slots a run allocates: `prefetch` ready ahead, the consumer's one, and the stage's in-flight ones.
inline int slot_count(const RunConfig& c, int extra_slots) { return c.prefetch + 1 + extra_slots; }

// `stop` (may be null) ends a long stand-in step early.
std::unique_ptr<DeviceStage> make_host_standin(const RunConfig& config, const std::atomic<bool>* stop = nullptr);
// The CUDA stage; unavailable (with the reason) when built without CUDA or no device is usable.
Status make_cuda_stage(const RunConfig& config, std::unique_ptr<DeviceStage>& out);
// True when a CUDA device can be used; `why` says why not otherwise.
bool cuda_device_present(std::string& why);

}  // namespace stalldx::pipeline
