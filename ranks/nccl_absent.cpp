// ranks/device_all_reduce.h without NCCL in the build.
#include "device_all_reduce.h"

namespace stalldx::ranks {

Status nccl_available() {
  return Status::unavailable("this stalldx was built without NCCL (CMake found no nccl.h/libnccl beside the CUDA toolkit or under NCCL_ROOT): "
                             "use --collective mpi");
}

Status make_nccl_all_reduce(const World&, std::size_t, void*, int, std::unique_ptr<DeviceAllReduce>&) { return nccl_available(); }

}  // namespace stalldx::ranks
