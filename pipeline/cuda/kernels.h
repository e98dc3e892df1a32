// Device kernels of the CUDA stage, launched on a caller-given stream. Sizes in elements/bytes as named.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace stalldx::pipeline::cuda {

// NHWC uint8 batch -> NCHW float32 normalized with ImageNet mean/std.
cudaError_t launch_normalize(const std::uint8_t* in, float* out, int batch, int size, cudaStream_t s);
// The synthetic model step: reads the whole batch, then `iters` rounds of FMA per thread on a grid that
// fills the device. Device time grows linearly with iters (calibrated by the caller).
cudaError_t launch_synthetic_step(const float* in, std::size_t n, int iters, float* sink, int sms, cudaStream_t s);
// Order-sensitive checksum (see pipeline/checksum.h) of `bytes` at `data`, added into *out (zeroed by the caller).
cudaError_t launch_checksum(const void* data, std::size_t bytes, unsigned long long* out, cudaStream_t s);

}  // namespace stalldx::pipeline::cuda
