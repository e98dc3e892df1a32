// --device none: the consumer thread itself plays the device, computing for --step-ms per step over the
// batch's bytes. Its compute intervals become device activity on a "host stand-in" lane (device -1).
#include <algorithm>
#include <vector>

#include "stalldx/stage/device_stage.h"
#include "stalldx/profiler.h"

namespace stalldx::pipeline {

namespace {
class HostStandin final : public DeviceStage {
 public:
  explicit HostStandin(const RunConfig& c) : config_(c), allocator_(make_pageable_allocator()) {
    intervals_.reserve(static_cast<std::size_t>(c.warmup + c.steps));
  }
  SlotAllocator& allocator() override { return *allocator_; }
  int extra_slots() const override { return 0; }

  Status submit_step(std::int64_t step, BatchSlot& slot, std::uint64_t host_sum, std::function<void()>& fence) override {
    STALLDX_RANGE(user, "standin_compute", RangeIds{step, slot.batch, -1});
    const std::int64_t begin = now_ns();
    const auto deadline = begin + static_cast<std::int64_t>(config_.step_ms * 1e6);
    // Real work over the batch (a strided reduction) until the step's time is spent.
    volatile std::uint64_t sink = 0;
    std::uint64_t acc = 0;
    std::size_t pos = 0;
    do {
      for (int i = 0; i < 4096; ++i) {
        acc += slot.data[pos];
        pos = (pos + 4093) % slot.bytes;
      }
    } while (now_ns() < deadline);
    sink = acc;
    (void)sink;
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
  std::unique_ptr<SlotAllocator> allocator_;
  std::vector<Interval> intervals_;
  std::uint64_t verified_ = 0;
};
}  // namespace

std::unique_ptr<DeviceStage> make_host_standin(const RunConfig& config) { return std::make_unique<HostStandin>(config); }

}  // namespace stalldx::pipeline
