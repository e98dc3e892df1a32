// Collector hooks: how optional collectors (NVTX, CUPTI in profiler/cuda/) attach to the core recorder
// without the core including CUDA. Installed before Session::start; all may be null.
#pragma once

#include <cstdint>
#include <string>

#include "stalldx/profiler.h"

namespace stalldx {

struct CollectorHooks {
  // NVTX mirror of every range (called on the recording thread, inside begin/end).
  void (*range_push)(NameId name, Role role) noexcept = nullptr;
  void (*range_pop)() noexcept = nullptr;
  // External correlation around a step's submission.
  void (*step_push)(std::int64_t step) noexcept = nullptr;
  void (*step_pop)() noexcept = nullptr;
};

// A device collector (CUPTI). start() before the run, stop_and_drain() merges into the trace.
class DeviceCollector {
 public:
  virtual ~DeviceCollector() = default;
  virtual Status start() = 0;
  virtual void stop_and_drain(Trace& trace) = 0;
};

// Process-wide hook table (read on every range when set; written only while no session runs).
CollectorHooks& collector_hooks() noexcept;
// Registers the device collector the next Session::start will start (ownership stays with caller;
// it must outlive the session). nullptr clears it.
void set_device_collector(DeviceCollector* collector) noexcept;
DeviceCollector* device_collector() noexcept;
// Name of a registered NameId (for collectors that need the string, e.g. NVTX registration).
std::string registered_name(NameId id);

}  // namespace stalldx
