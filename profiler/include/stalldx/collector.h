// Collectors: what a Session runs beside host recording (the CUPTI activity collector, the NVTX
// mirror of profiler/cuda/). A collector is handed to the session explicitly, which owns it from then
// on; nothing is set up as a side effect of constructing something else.
//
//   stalldx::Session session;
//   stalldx::cuda::install(session);          // <stalldx/cuda.h>: adds the CUPTI + NVTX collectors
//   session.start({});                        // starts them, per SessionOptions
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "stalldx/roles.h"
#include "stalldx/status.h"
#include "stalldx/trace_model.h"

namespace stalldx {

using NameId = std::uint32_t;
struct SessionOptions;

// Called on the recording thread inside each range / step mark while the session records: must not
// block, lock, allocate or throw. Any may be null.
struct RangeHooks {
  // NVTX mirror of every range; `batch` (-1 = none) travels as the range's int64 payload.
  void (*range_push)(NameId name, Role role, std::int64_t batch) noexcept = nullptr;
  void (*range_pop)() noexcept = nullptr;
  void (*step_push)(std::int64_t step) noexcept = nullptr;        // external correlation around a step's submission
  void (*step_pop)() noexcept = nullptr;
};

class Collector {
 public:
  virtual ~Collector() = default;
  virtual std::string_view name() const = 0;
  // Starts collecting as `options` ask (a collector whose kind is off returns OK and collects nothing).
  // Fills the hooks it needs (the session refuses two collectors setting the same hook). An error means
  // "not collected": the session notes it in the trace's metadata and records without it.
  virtual Status start(const SessionOptions& options, RangeHooks& hooks, TraceMeta& meta) = 0;
  // Stops and merges what was collected into `trace` (the host records are already in it). Idempotent.
  virtual void stop_and_drain(Trace& trace) = 0;
};

// Name of a registered NameId (for collectors that need the string, e.g. NVTX registration). Locks.
std::string registered_name(NameId id);

}  // namespace stalldx
