// The step's collective (world.h make_step_collective): an agreement on leaving, then the gradients'
// all-reduce — NCCL on the GPU's stream, or MPI on host buffers — chosen when the run's device is known.
#include <fmt/format.h>

#include <vector>

#include "device_all_reduce.h"
#include "stalldx/ranks/world.h"
#include "transport.h"

namespace stalldx::ranks {

namespace {
class StepAllReduce final : public pipeline::StepCollective {
 public:
  StepAllReduce(const World& w, const RunConfig& c, const std::atomic<bool>* stop)
      : w_(w), stop_(stop), kind_(c.collective), mb_(c.allreduce_mb), device_(c.device_index) {}
  ~StepAllReduce() override {
    // An all-reduce given up on may still write into its buffer while the job ends: never freed then.
    if (abandoned_) static_cast<void>(new std::vector<float>(std::move(host_)));
  }

  Status start(pipeline::DeviceStage* stage) override {
    int failed = -1;
    if (Status st = agree_first(w_, stage == nullptr, failed); !st.is_ok()) return st;
    if (stage == nullptr) return Status::ok();  // this rank's own failure is the one reported
    if (failed >= 0) return Status::unavailable(fmt::format("rank {} could not set up its run: this one stops with it", failed));
    const std::size_t bytes = static_cast<std::size_t>(mb_ * 1e6);
    void* stream = stage->cuda_stream();
    const bool nccl = kind_ == CollectiveKind::nccl || (kind_ == CollectiveKind::auto_select && stream != nullptr && nccl_available().is_ok());
    if (!nccl) {
      host_.assign(bytes / sizeof(float), 0.f);
      return Status::ok();
    }
    // Every rank agrees before NCCL: one on the host stand-in would leave the others in ncclCommInitRank.
    Status mine = stream != nullptr ? Status::ok()
                                    : Status::invalid("--collective nccl needs a CUDA device (this run has the host stand-in); use --collective mpi");
    if (Status st = agree_first(w_, !mine.is_ok(), failed); !st.is_ok()) return st;
    if (!mine.is_ok()) return mine;
    if (failed >= 0) return Status::unavailable(fmt::format("rank {} has no CUDA device for the NCCL all-reduce: this one stops with it", failed));
    return make_nccl_all_reduce(w_, bytes, stream, device_, device_reduce_);
  }

  Status after_step(std::int64_t, bool leaving, pipeline::StepEnd& end) override {
    end = {};
    if (Status st = agree_first(w_, leaving, end.leaver, stop_, &end.stopped_waiting); !st.is_ok()) return st;
    if (end.any_leaving()) return Status::ok();
    if (device_reduce_) return device_reduce_->enqueue();
    if (Status st = host_sum(w_, host_.data(), host_.size(), stop_, &end.stopped_waiting); !st.is_ok()) return st;
    abandoned_ = end.stopped_waiting;
    return Status::ok();
  }

  std::string describe() const override {
    return device_reduce_ ? device_reduce_->describe() : fmt::format("MPI_Allreduce {:.1f} MB", static_cast<double>(bytes()) / 1e6);
  }
  std::uint64_t bytes() const override { return device_reduce_ ? device_reduce_->bytes() : host_.size() * sizeof(float); }

 private:
  const World& w_;
  const std::atomic<bool>* stop_;
  CollectiveKind kind_;
  double mb_;
  int device_;
  std::vector<float> host_;  // zeros: sums stay zeros, the bytes moved are what counts
  bool abandoned_ = false;
  std::unique_ptr<DeviceAllReduce> device_reduce_;
};
}  // namespace

Status make_step_collective(const World& w, const RunConfig& c, const std::atomic<bool>* stop, std::unique_ptr<pipeline::StepCollective>& out) {
  out.reset();
  if (c.allreduce_mb <= 0 || c.collective == CollectiveKind::none) return Status::ok();
  if (c.collective == CollectiveKind::auto_select && c.world_size <= 1) return Status::ok();
  if (c.collective == CollectiveKind::nccl && c.device == DeviceKind::none)
    return Status::invalid("--collective nccl with --device none: NCCL needs a GPU; use --collective mpi");
  if (c.collective == CollectiveKind::nccl)
    if (Status st = nccl_available(); !st.is_ok()) return st.prefixed("--collective nccl");
  if (c.world_size > 1 && !w.mpi && !built_with_mpi())
    return Status::unavailable("--world-size > 1 with an all-reduce needs MPI (this stalldx was built without it)");
  out = std::make_unique<StepAllReduce>(w, c, stop);
  return Status::ok();
}

}  // namespace stalldx::ranks
