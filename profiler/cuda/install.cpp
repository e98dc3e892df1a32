#include "collectors.h"
#include "stalldx/cuda.h"
#include "stalldx/nvtx.h"

namespace stalldx::cuda {

Status install(Session& session) {
  if (Status st = session.add_collector(make_cupti_collector()); !st.is_ok()) return st;
  return nvtx::install_mirror(session);
}

Status install_cupti(Session& session) { return session.add_collector(make_cupti_collector()); }

}  // namespace stalldx::cuda
