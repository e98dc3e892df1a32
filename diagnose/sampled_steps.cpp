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
}  // namespace

void carry_from_windows(const DeviceWindows& windows, Report& rep) {
  if (!windows.sampled()) return;
  Coverage& cov = rep.coverage;
  cov.sampled = true;
  cov.sample_plan = windows.plan_words();
  cov.device_windows = windows.count();
  std::vector<std::size_t> sources;
  for (std::size_t i = 0; i < rep.steps.size(); ++i) {
    if (rep.steps[i].basis == StepBasis::device) cov.steps_in_windows++;
    if (carries(rep.steps[i])) sources.push_back(i);
  }
  for (StepDiagnosis& s : rep.steps) {
    if (s.basis != StepBasis::host_records || s.verdict != Verdict::device_bound || sources.empty()) continue;
    // The nearest by step number (ties: the earlier window).
    const auto nearest = *std::min_element(sources.begin(), sources.end(), [&](std::size_t a, std::size_t b) {
      return std::llabs(rep.steps[a].step - s.step) < std::llabs(rep.steps[b].step - s.step);
    });
    const StepDiagnosis& from = rep.steps[nearest];
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
    s.evidence = fmt::format("{}; waited {:.2f} of {:.2f} ms: {} carried from step {}",
                             s.at_window_edge ? "device records partial (at a device window's edge)" : "no device records (outside the device windows)",
                             own_input, s.window_ms, verdict_name(from.verdict, cov.standin), from.step);
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
