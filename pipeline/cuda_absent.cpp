// Built when CMake found no CUDA toolkit: the CUDA stage does not exist in this binary.
#include "stalldx/stage/device_stage.h"

namespace stalldx::pipeline {

Status make_cuda_stage(const RunConfig&, std::unique_ptr<DeviceStage>&) {
  return Status::unavailable("this stalldx was built without CUDA (no toolkit at configure time)");
}
bool cuda_device_present(std::string& why) {
  why = "built without CUDA";
  return false;
}

}  // namespace stalldx::pipeline
