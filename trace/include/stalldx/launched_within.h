// Device work by where the host launched it: the activities whose launching CUDA call (linked by its
// correlation id) ran on a thread inside a host range of a given role — e.g. the kernels an all-reduce
// enqueued from inside its `collective` range, whichever stream they ran on and whenever they ran.
#pragma once

#include <cstddef>
#include <vector>

#include "stalldx/trace_model.h"

namespace stalldx {

// Indices into t.activities, ascending. A call counts when it began inside a range of `role` on its own
// thread; activities without a correlation, or whose call was not recorded, are never included.
std::vector<std::size_t> activities_launched_within(const Trace& t, Role role);

}  // namespace stalldx
