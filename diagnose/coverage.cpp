#include "coverage.h"

#include <fmt/format.h>

#include <charconv>

#include "stalldx/record/merge.h"
#include "stalldx/record/step_inference.h"

namespace stalldx::diagnose {

Coverage recorded_coverage(const Trace& t, const TraceIndex& ix) {
  Coverage cov;
  cov.host = t.meta.host;
  cov.cpu_time = t.meta.cpu_time;
  cov.nvtx = t.meta.nvtx;
  cov.cupti = t.meta.cupti;
  cov.standin = ix.standin;
  cov.device_records = !ix.busy.empty();
  cov.dropped_host = t.meta.dropped_host;
  cov.dropped_counters = t.meta.dropped_counters;
  cov.dropped_device = t.meta.dropped_device;
  cov.interrupted = t.meta.interrupted;
  cov.begins_mid_run = t.meta.config.count(record::kHostRingKey) > 0;
  if (auto it = t.meta.config.find(record::kStepsBeforeTraceKey); cov.begins_mid_run && it != t.meta.config.end()) {
    std::int64_t n = -1;
    const std::string& v = it->second;
    if (std::from_chars(v.data(), v.data() + v.size(), n).ec == std::errc{} && n >= 0) cov.first_step = n;
  }
  return cov;
}

void judge_coverage(const Trace& t, const TraceIndex& ix, const TraceDoubts& doubts, Coverage& cov) {
  std::vector<std::string> lowered;
  if (cov.dropped_host + cov.dropped_device > 0)
    lowered.push_back(fmt::format("{} host and {} device records were dropped", cov.dropped_host, cov.dropped_device));
  if (cov.unmatched_device > 0) lowered.push_back(fmt::format("{} device records have no step", cov.unmatched_device));
  note_doubts(doubts, cov, lowered);
  if (t.meta.skipped_events > 0) {
    lowered.push_back(fmt::format("{} events of the file could not be used", t.meta.skipped_events));
    cov.notes.push_back(fmt::format("{} events were skipped when reading the trace (they ended before its origin)", t.meta.skipped_events));
  }
  if (!cov.device_records) {
    lowered.push_back("no device records");
    cov.notes.push_back(cov.cupti ? "CUPTI was on but recorded no device work: verdicts are not given, only host waits"
                                  : "device records were not collected (CUPTI off or unavailable): no verdicts, host waits only");
  }
  // Steps the program did not mark (record/step_inference.h): from the period of its CUDA activity.
  record::StepRule rule = record::StepRule::none;
  if (auto it = t.meta.config.find("steps_rule"); it != t.meta.config.end() && record::step_rule_from_name(it->second, rule) &&
                                                   rule == record::StepRule::cuda_period)
    lowered.push_back("steps inferred from the period of the CUDA activity, not marked by the program");
  if (ix.steps.empty()) {
    std::size_t device_work = 0;
    for (const DeviceActivity& a : t.activities) device_work += is_device_work(a.kind) ? 1 : 0;
    cov.notes.push_back(fmt::format("no steps found in what was recorded: {} threads, {} ranges, {} CUDA calls, {} device records{}", t.threads.size(),
                                    t.ranges.size(), t.calls.size(), device_work,
                                    t.meta.config.count("steps_found_by") ? " (" + t.meta.config.at("steps_found_by") + ")" : ""));
  }
  if (cov.interrupted) cov.notes.push_back("the run was interrupted: the last steps may be incomplete");
  if (cov.begins_mid_run)
    cov.notes.push_back(cov.first_step >= 0
                            ? fmt::format("the trace begins mid-run, at step {} (a long run keeps each thread's newest ranges): warm-up and "
                                          "start-up are before it, and steps are numbered as the run counted them", cov.first_step)
                            : std::string("the trace begins mid-run (a long run keeps each thread's newest ranges): warm-up and start-up are "
                                          "before it; steps are counted from where it begins"));
  const RecordedConfig& recorded = ix.recorded;
  for (const std::string& p : recorded.problems) cov.notes.push_back(p);
  if (!recorded.problems.empty()) lowered.push_back(fmt::format("{} recorded config values refused", recorded.problems.size()));
  if (!lowered.empty()) {
    cov.confidence = Confidence::lowered;
    cov.lowered_because = lowered;
  }
}

}  // namespace stalldx::diagnose
