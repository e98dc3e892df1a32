#include "sampled_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace stalldx::diagnose {

DeviceWindows::DeviceWindows(const Trace& t, bool device_records) {
  auto w = record::device_windows(t.meta);
  if (!w || !device_records) return;
  sampled_ = true;
  windows_ = std::move(*w);
  for (const record::DeviceWindow& win : windows_)
    latest_end_.push_back(latest_end_.empty() ? win.end_ns : std::max(latest_end_.back(), win.end_ns));
  record::SamplePlan plan;
  std::string error;
  const auto it = t.meta.config.find(record::kSamplePlanKey);
  plan_words_ = it != t.meta.config.end() && record::SamplePlan::parse(it->second, plan, error) ? plan.words() : "sampled";
}

std::ptrdiff_t DeviceWindows::window_of(const HostRange& step) const {
  if (!sampled_) return 0;
  // Some window begun by the step's begin lasts to its end: the latest end among those windows does.
  const auto it = std::upper_bound(windows_.begin(), windows_.end(), step.begin_ns,
                                   [](std::int64_t b, const record::DeviceWindow& w) { return b < w.begin_ns; });
  if (it == windows_.begin()) return -1;
  std::ptrdiff_t i = it - windows_.begin() - 1;
  if (latest_end_[static_cast<std::size_t>(i)] < step.end_ns) return -1;
  while (windows_[static_cast<std::size_t>(i)].end_ns < step.end_ns) --i;  // the one that holds it (ends are cumulative maxima)
  return i;
}

namespace {
// A window step that did not wait on its input: what it says about the device side is carried.
bool carries(const StepDiagnosis& s) {
  return s.basis == StepBasis::device && !s.warmup && (s.verdict == Verdict::device_bound || s.verdict == Verdict::submission);
}

// The step of `candidates` nearest to `s` by step number (ties: the earlier).
std::size_t nearest(const std::vector<std::size_t>& candidates, const Report& rep, const StepDiagnosis& s) {
  return *std::min_element(candidates.begin(), candidates.end(), [&](std::size_t a, std::size_t b) {
    return std::llabs(rep.steps[a].step - s.step) < std::llabs(rep.steps[b].step - s.step);
  });
}

// The device's own work a step near a host-records step: the median (the lower middle of an even count)
// of the own device work of the window steps around the nearest one — the measured steps of consecutive
// step numbers, one window's — so that one step of a window with more or less work (a longer batch, a
// late kernel) does not set the bound alone. Steps [first, last] of that window gave it.
struct DeviceWork {
  double ms = 0;
  std::int64_t first = -1, last = -1;
};

DeviceWork device_work_near(const std::vector<std::size_t>& measured, const Report& rep, const StepDiagnosis& s) {
  const auto at = std::find(measured.begin(), measured.end(), nearest(measured, rep, s));
  auto lo = at, hi = at + 1;
  while (lo != measured.begin() && rep.steps[*(lo - 1)].step + 1 == rep.steps[*lo].step) --lo;
  while (hi != measured.end() && rep.steps[*(hi - 1)].step + 1 == rep.steps[*hi].step) ++hi;
  std::vector<double> work;
  for (auto i = lo; i != hi; ++i) work.push_back(rep.steps[*i].work_ms);
  const auto mid = work.begin() + static_cast<std::ptrdiff_t>((work.size() - 1) / 2);
  std::nth_element(work.begin(), mid, work.end());
  return {*mid, rep.steps[*lo].step, rep.steps[*(hi - 1)].step};
}

// What bounding a wait by the device's work found (waited < 0: the wait was not bounded).
struct WaitBound {
  double waited = -1;
  DeviceWork device;
  std::string words() const {
    const std::string from = device.first == device.last ? fmt::format("step {}", device.first)
                                                         : fmt::format("median of steps {}-{}", device.first, device.last);
    return fmt::format("waited {:.2f} ms, but the device runs about {:.2f} ms of work a step ({}, in a window)", waited, device.ms, from);
  }
};

// A host-records step's wait, counted only up to what the device's work (window steps' own device work —
// not their busy time, which in a window's first step holds the previous step's work too) left of the
// step idle; the step becomes device-bound (to be carried) when that is under the device-bound threshold.
WaitBound bound_wait_by_device_work(const DeviceWork& work, const Thresholds& th, StepDiagnosis& s) {
  const double bound = std::max(0.0, s.window_ms - work.ms);
  if (s.stall_ms <= bound || s.stall_ms <= 0) return {};
  const WaitBound b{s.stall_ms, work};
  const double f = bound / s.stall_ms;
  for (double& c : s.class_ms) c *= f;
  for (CauseShare& c : s.causes) c.ms *= f;
  s.stall_ms = bound;
  s.details.insert(s.details.begin(), fmt::format("{}: at most {:.2f} ms of the wait idled it (the lines below: the whole wait)", b.words(), bound));
  if (bound <= th.device_bound_limit(s.window_ms))
    s.verdict = Verdict::device_bound;
  else
    s.evidence = fmt::format("{}: at most {:.2f} of it idled the device; {}", b.words(), bound, s.evidence);
  return b;
}
}  // namespace

void carry_from_windows(const DeviceWindows& windows, const Thresholds& th, Report& rep) {
  if (!windows.sampled()) return;
  Coverage& cov = rep.coverage;
  cov.sampled = true;
  cov.sample_plan = windows.plan_words();
  cov.device_windows = windows.count();
  std::vector<std::size_t> sources, measured;  // window steps that did not wait; steady window steps with device work
  for (std::size_t i = 0; i < rep.steps.size(); ++i) {
    const StepDiagnosis& s = rep.steps[i];
    if (s.basis == StepBasis::device) cov.steps_in_windows++;
    if (carries(s)) sources.push_back(i);
    if (s.basis == StepBasis::device && !s.warmup && s.work_ms > 0) measured.push_back(i);
  }
  std::vector<WaitBound> bounds(rep.steps.size());
  for (std::size_t i = 0; i < rep.steps.size(); ++i) {
    StepDiagnosis& s = rep.steps[i];
    if (s.basis == StepBasis::host_records && !s.warmup && s.verdict != Verdict::device_bound && !measured.empty())
      bounds[i] = bound_wait_by_device_work(device_work_near(measured, rep, s), th, s);
  }
  for (std::size_t i = 0; i < rep.steps.size(); ++i) {
    StepDiagnosis& s = rep.steps[i];
    if (s.basis != StepBasis::host_records || s.verdict != Verdict::device_bound || sources.empty()) continue;
    const StepDiagnosis& from = rep.steps[nearest(sources, rep, s)];
    const double scale = from.window_ms > 0 ? s.window_ms / from.window_ms : 0;
    const double own_input = s.class_ms[0] + s.class_ms[1];
    s.basis = StepBasis::carried;
    s.carried_from = from.step;
    s.verdict = from.verdict;
    s.launch = from.launch;
    // The device side's shares as in the window step; the waits this step's own records show.
    s.busy_ms = from.busy_ms * scale;
    s.class_ms[2] = from.class_ms[2] * scale;
    s.class_ms[3] = from.class_ms[3] * scale;
    s.stall_ms = own_input + s.class_ms[2] + s.class_ms[3];
    s.causes.clear();
    for (const CauseShare& c : from.causes)
      if (cause_class(c.cause) == StallClass::submission || cause_class(c.cause) == StallClass::unattributed)
        s.causes.push_back(CauseShare{c.cause, c.ms * scale, c.what});
    const std::string waited = bounds[i].waited >= 0
                                   ? fmt::format("{}: at most {:.2f} of the step's {:.2f} ms idled it", bounds[i].words(), own_input, s.window_ms)
                                   : fmt::format("waited {:.2f} of {:.2f} ms", own_input, s.window_ms);
    s.evidence = fmt::format("{}; {}: {} carried from step {}",
                             s.at_window_edge ? "device records partial (at a device window's edge)" : "no device records (outside the device windows)",
                             waited, verdict_name(from.verdict, cov.standin), from.step);
    s.next_question = from.next_question;
    cov.steps_carried++;
  }
  cov.confidence = Confidence::lowered;
  cov.lowered_because.push_back(fmt::format(
      "device records sampled ({}): {} of {} steps judged on the device's timeline in {} device window{}; the others from host records, "
      "device-bound or launch-bound carried from the nearest window ({} steps)",
      cov.sample_plan, cov.steps_in_windows, rep.steps.size(), cov.device_windows, cov.device_windows == 1 ? "" : "s", cov.steps_carried));
}

}  // namespace stalldx::diagnose
