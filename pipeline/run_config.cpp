#include "run_config.h"

namespace stalldx::pipeline {

const char* to_string(OutputFormat v) { return v == OutputFormat::float32_nchw ? "float32" : "uint8"; }
const char* to_string(TransformKind v) { return v == TransformKind::train ? "train" : "eval"; }
const char* to_string(DeviceKind v) {
  return v == DeviceKind::cuda ? "cuda" : v == DeviceKind::none ? "none" : "auto";
}
const char* to_string(MemoryKind v) { return v == MemoryKind::pinned ? "pinned" : "pageable"; }
const char* to_string(CopyStyle v) { return v == CopyStyle::batch ? "batch" : "sample"; }
const char* to_string(BadSamplePolicy v) { return v == BadSamplePolicy::skip ? "skip" : "fail"; }

std::size_t sample_bytes(const RunConfig& c) {
  const std::size_t px = static_cast<std::size_t>(c.size) * c.size * 3;
  return c.output == OutputFormat::float32_nchw ? px * sizeof(float) : px;
}
std::size_t batch_bytes(const RunConfig& c) { return sample_bytes(c) * static_cast<std::size_t>(c.batch); }

}  // namespace stalldx::pipeline
