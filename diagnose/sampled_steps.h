// Steps of a sampled recording (`record --sample`, stalldx/record/sampling.h): which steps lie inside a
// device window, and the "carried from the nearest window" rule for the others.
#pragma once

#include <vector>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/record/sampling.h"

namespace stalldx::diagnose {

class DeviceWindows {
 public:
  // Sampled when the trace names windows and has device records at all.
  DeviceWindows(const Trace& t, bool device_records);
  bool sampled() const { return sampled_; }
  // Unsampled: every step. Sampled: a step that lies wholly inside one window.
  bool covers(const HostRange& step) const { return window_of(step) >= 0; }
  // Sampled: the index of the window the step lies wholly inside (windows sorted by begin), else -1.
  // Unsampled: 0 for every step.
  std::ptrdiff_t window_of(const HostRange& step) const;
  std::size_t count() const { return windows_.size(); }
  const std::string& plan_words() const { return plan_words_; }

 private:
  bool sampled_ = false;
  std::vector<record::DeviceWindow> windows_;     // sorted by begin
  std::vector<std::int64_t> latest_end_;         // latest_end_[i]: the latest end among windows_[0..i]
  std::string plan_words_;
};

// After every step is judged, for the steps judged from host records (outside the windows):
//  - a wait can have idled the device only for what of the step its work did not fill: the device runs
//    about the nearest steady window step's own device work B a step, so of a step of S ms at most
//    S − B idled it (the rest of the wait ran beside work still queued). A wait longer than that is
//    counted only up to it, and the step re-judged (`th`: the device-bound threshold);
//  - a step that did not wait (device-bound by its waits alone) takes the verdict of the nearest steady
//    window step that did not wait either — device-bound or submission (launch rate) — with that step's
//    busy and stall fractions scaled to its own length.
// Notes the sampling in the coverage (lowered confidence, counts).
void carry_from_windows(const DeviceWindows& windows, const Thresholds& th, Report& rep);

}  // namespace stalldx::diagnose
