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

// What bounding a wait by the device's work found (waited < 0: the wait was not bounded).
struct WaitBound {
  double waited = -1, device_ms = 0;
  std::int64_t from_step = -1;
  std::string words() const {
    return fmt::format("waited {:.2f} ms, but the device runs about {:.2f} ms of work a step (step {}, in a window)", waited, device_ms, from_step);
  }
};

// A host-records step's wait, counted only up to what the device's work (the nearest window step's own
// device work — not its busy time, which in a window's first step holds the previous step's work too) left
// of the step idle; the step becomes device-bound (to be carried) when that is under the
// device-bound threshold.
WaitBound bound_wait_by_device_work(const StepDiagnosis& from, const Thresholds& th, StepDiagnosis& s) {
  const double bound = std::max(0.0, s.window_ms - from.work_ms);
  if (s.stall_ms <= bound || s.stall_ms <= 0) return {};
  const WaitBound b{s.stall_ms, from.work_ms, from.step};
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
      bounds[i] = bound_wait_by_device_work(rep.steps[nearest(measured, rep, s)], th, s);
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
