// ranks/device_all_reduce.h on NCCL. Two device buffers (out of place: even one rank's all-reduce
// moves the bytes, so its device record exists), its own non-blocking stream, two events.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include "device_all_reduce.h"
#include "transport.h"

namespace stalldx::ranks {

namespace {
Status cuda_check(cudaError_t rc, const char* what) {
  return rc == cudaSuccess ? Status::ok() : Status::unavailable(fmt::format("{} failed: {}", what, cudaGetErrorString(rc)));
}
Status nccl_check(ncclResult_t rc, const char* what) {
  return rc == ncclSuccess ? Status::ok() : Status::unavailable(fmt::format("{} failed: {}", what, ncclGetErrorString(rc)));
}

class NcclAllReduce final : public DeviceAllReduce {
 public:
  NcclAllReduce(std::size_t bytes, cudaStream_t compute) : count_(bytes / 2), compute_(compute) {}
  ~NcclAllReduce() override {
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    for (cudaEvent_t e : {step_done_, reduced_})
      if (e != nullptr) cudaEventDestroy(e);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    cudaFree(send_);
    cudaFree(recv_);
  }

  // Local resources first, then an agreement, then the communicator: no rank enters ncclCommInitRank
  // (which waits for every rank) when another could not get that far.
  Status init(const World& w, int device) {
    Status local = cuda_check(cudaSetDevice(device), "cudaSetDevice");
    if (local.is_ok()) local = cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    if (local.is_ok()) local = cuda_check(cudaEventCreateWithFlags(&step_done_, cudaEventDisableTiming), "cudaEventCreate");
    if (local.is_ok()) local = cuda_check(cudaEventCreateWithFlags(&reduced_, cudaEventDisableTiming), "cudaEventCreate");
    if (local.is_ok()) local = cuda_check(cudaMalloc(&send_, count_ * 2), "cudaMalloc (gradients)");
    if (local.is_ok()) local = cuda_check(cudaMalloc(&recv_, count_ * 2), "cudaMalloc (reduced gradients)");
    if (local.is_ok()) local = cuda_check(cudaMemset(send_, 0, count_ * 2), "cudaMemset");
    ncclUniqueId id{};
    if (local.is_ok() && w.rank == 0) local = nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    int failed = -1;
    if (Status st = agree_first(w, !local.is_ok(), failed); !st.is_ok()) return st;
    if (!local.is_ok()) return local;
    if (failed >= 0) return Status::unavailable(fmt::format("rank {} could not set up its NCCL all-reduce: this one stops with it", failed));
    if (Status st = broadcast_from_root(w, &id, sizeof id); !st.is_ok()) return st;
    return nccl_check(ncclCommInitRank(&comm_, w.size, id, w.rank), "ncclCommInitRank");
  }

  Status enqueue() override {
    if (Status st = cuda_check(cudaEventRecord(step_done_, compute_), "cudaEventRecord (step done)"); !st.is_ok()) return st;
    if (Status st = cuda_check(cudaStreamWaitEvent(stream_, step_done_, 0), "cudaStreamWaitEvent (all-reduce after the step)"); !st.is_ok()) return st;
    if (Status st = nccl_check(ncclAllReduce(send_, recv_, count_, ncclBfloat16, ncclSum, comm_, stream_), "ncclAllReduce"); !st.is_ok()) return st;
    if (Status st = cuda_check(cudaEventRecord(reduced_, stream_), "cudaEventRecord (reduced)"); !st.is_ok()) return st;
    return cuda_check(cudaStreamWaitEvent(compute_, reduced_, 0), "cudaStreamWaitEvent (next step after the all-reduce)");
  }
  std::string describe() const override { return fmt::format("NCCL all-reduce {:.1f} MB (bf16)", static_cast<double>(bytes()) / 1e6); }
  std::size_t bytes() const override { return count_ * 2; }

 private:
  std::size_t count_;            // bf16 elements
  cudaStream_t compute_;         // the stage's; not owned
  cudaStream_t stream_ = nullptr;
  cudaEvent_t step_done_ = nullptr, reduced_ = nullptr;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  ncclComm_t comm_ = nullptr;
};
}  // namespace

Status nccl_available() { return Status::ok(); }

Status make_nccl_all_reduce(const World& w, std::size_t bytes, void* compute_stream, int device, std::unique_ptr<DeviceAllReduce>& out) {
  auto a = std::make_unique<NcclAllReduce>(bytes, static_cast<cudaStream_t>(compute_stream));
  if (Status st = a->init(w, device); !st.is_ok()) return st;
  out = std::move(a);
  return Status::ok();
}

}  // namespace stalldx::ranks
