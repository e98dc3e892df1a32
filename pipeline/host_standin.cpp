// --device none: the consumer thread itself plays the device for --step-ms per step: it reads the batch
// once (a strided reduction, as a copy would) and then waits out the rest of the step, as a host thread
// waits on a GPU — a device computes without the host's CPU, so the stand-in leaves the cores to the
// workers (a spinning stand-in made the consumer and the decoders fight for 2 cores, which a real GPU
// step never does). Its intervals become device activity on a "host stand-in" lane (device -1).
#include <algorithm>
#include <vector>

#include "cancellable_sleep.h"
#include "nvtx_mirror.h"
#include "stalldx/stage/device_stage.h"
#include "stalldx/profiler.h"

namespace stalldx::pipeline {

namespace {
class HostStandin final : public DeviceStage {
 public:
  HostStandin(const RunConfig& c, const std::atomic<bool>* stop) : config_(c), stop_(stop), allocator_(make_pageable_allocator()) {
    intervals_.reserve(static_cast<std::size_t>(c.warmup + c.steps));
  }
  SlotAllocator& allocator() override { return *allocator_; }
  int extra_slots() const override { return 0; }
  Status install_collectors(Session& session) override { return install_nvtx_mirror(session); }

  Status submit_step(std::int64_t step, BatchSlot& slot, std::uint64_t host_sum, std::function<void()>& fence) override {
    STALLDX_RANGE(user, "standin_compute", RangeIds{step, slot.batch, -1});
    const std::int64_t begin = now_ns();
    const auto deadline = begin + static_cast<std::int64_t>(config_.step_ms * 1e6);
    // Read the batch once (every 64th byte: each cache line), bounded by the step's time.
    volatile std::uint64_t sink = 0;
    std::uint64_t acc = 0;
    for (std::size_t pos = 0; pos < slot.bytes; pos += 64) {
      acc += slot.data[pos];
      if ((pos & 0xFFFFF) == 0 && now_ns() >= deadline) break;
    }
    sink = acc;
    (void)sink;
    // Then the device "computes": wait out the step in slices, waking early on a stop request.
    sleep_until(deadline, stop_);
    if (intervals_.size() < intervals_.capacity()) intervals_.push_back({begin, now_ns(), step});
    if (host_sum != 0) verified_++;
    fence = nullptr;
    return Status::ok();
  }
  Status drain() override { return Status::ok(); }
  Status finish() override { return Status::ok(); }
  DeviceStats stats() const override {
    DeviceStats s;
    s.description = "host stand-in (no device; --step-ms of host compute per step)";
    s.standin = true;
    s.calibrated_step_ms = config_.step_ms;
    s.verified_batches = verified_;
    return s;
  }
  void append_records(Trace& t) const override {
    const std::uint32_t name = t.intern("standin_step");
    for (const auto& iv : intervals_) {
      DeviceActivity a;
      a.begin_ns = iv.begin;
      a.end_ns = iv.end;
      a.device = -1;
      a.stream = 0;
      a.kind = ActivityKind::standin;
      a.name = name;
      a.step = iv.step;
      t.activities.push_back(a);
    }
  }

 private:
  struct Interval { std::int64_t begin, end, step; };
  RunConfig config_;
  const std::atomic<bool>* stop_;  // a long stand-in step ends early on a stop request
  std::unique_ptr<SlotAllocator> allocator_;
  std::vector<Interval> intervals_;
  std::uint64_t verified_ = 0;
};
}  // namespace

std::unique_ptr<DeviceStage> make_host_standin(const RunConfig& config, const std::atomic<bool>* stop) {
  return std::make_unique<HostStandin>(config, stop);
}

}  // namespace stalldx::pipeline
