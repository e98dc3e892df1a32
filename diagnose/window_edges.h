// A sampled recording's device windows as the diagnosis walks the steps (`record --sample`): which
// window steps their device timeline can judge. A window opened after earlier steps cannot see the work
// launched before it, which the device may still run (its first step's idle time is unknown; its
// timeline is known from where every stream's first recorded work begins); when the device runs behind
// the host, a window's last steps' work runs after it closed (none or part of it recorded). Those steps,
// at a window's blind ends, are judged from host records like the steps between windows.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "sampled_steps.h"
#include "step_work.h"
#include "trace_index.h"

namespace stalldx::diagnose {

class WindowEdges {
 public:
  // All references outlive this object.
  WindowEdges(const Trace& t, const TraceIndex& ix, const StepWork& work, const DeviceWindows& windows)
      : t_(t), ix_(ix), work_(work), windows_(windows) {}

  // Called once per step, in order. Can `sr` be judged on the device's timeline? Unsampled: yes.
  // `previous_on_device`: the step before was; `previous_end`: where its device window ended (ns).
  // A step inside a window but at a blind end gets sd.at_window_edge and a detail saying why.
  bool on_device_timeline(const HostRange& sr, bool previous_on_device, std::int64_t previous_end, StepDiagnosis& sd);
  // Where the current window's device timeline is known from (ns; valid after on_device_timeline).
  std::int64_t known_from() const { return known_from_; }

 private:
  int launches_without_work(std::int64_t step);
  std::int64_t first_work_in_window(const HostRange& sr, std::ptrdiff_t w) const;

  const Trace& t_;
  const TraceIndex& ix_;
  const StepWork& work_;
  const DeviceWindows& windows_;
  std::ptrdiff_t last_window_ = -1;  // the window of the step seen before
  std::int64_t known_from_ = 0;
  std::map<std::int64_t, std::vector<const RuntimeCall*>> launches_;  // step -> outermost consumer launches (lazily)
  bool launches_indexed_ = false;
};

}  // namespace stalldx::diagnose
