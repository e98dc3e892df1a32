// The all-reduce on the GPU (nccl_all_reduce.cpp with NCCL in the build, nccl_absent.cpp without): a
// gradient-sized bf16 buffer summed across ranks on its own stream, ordered after the step's compute
// and before the next step's (the way DDP's reduced gradients precede the optimizer). The host only
// enqueues: a rank waiting for a straggler waits on the device, inside NCCL's kernel.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "stalldx/ranks/world.h"

namespace stalldx::ranks {

class DeviceAllReduce {
 public:
  virtual ~DeviceAllReduce() = default;
  // Enqueues one all-reduce after the work queued on the compute stream so far; that stream's later
  // work waits for it. Collective: every rank calls it once per step.
  virtual Status enqueue() = 0;
  virtual std::string describe() const = 0;  // "NCCL all-reduce 51.2 MB (bf16)"
  virtual std::size_t bytes() const = 0;
};

// Ok when this build has NCCL; else why not (the one message for it).
Status nccl_available();
// Creates the communicator over `w` (rank 0's unique id broadcast through the transport; alone: one
// rank) on CUDA device `device`, with `bytes` of bf16 gradients; `compute_stream` is the stage's
// cudaStream_t. Collective over the world.
Status make_nccl_all_reduce(const World& w, std::size_t bytes, void* compute_stream, int device, std::unique_ptr<DeviceAllReduce>& out);

}  // namespace stalldx::ranks
