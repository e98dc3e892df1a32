#include "stalldx/diagnose/live.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "headline.h"
#include "stalldx/record/sampling.h"

namespace stalldx::diagnose {

LiveLine live_line(const Trace& snapshot, std::int64_t since_ns, std::int64_t now_ns, std::int64_t started_ns, std::int64_t first_step) {
  LiveLine l;
  l.elapsed_s = static_cast<double>(now_ns - started_ns) / 1e9;
  // Windows are counted once device records exist (a program that never uses CUDA has windows of host
  // records only: no "device windows" to speak of).
  if (const auto w = record::device_windows(snapshot.meta); w && snapshot.meta.cupti) l.device_windows = w->size();
  Thresholds th;
  th.warmup_steps = 0;
  Report rep = diagnose(snapshot, th);
  Report recent;
  recent.coverage = rep.coverage;
  const double since_ms = static_cast<double>(since_ns - snapshot.meta.origin_ns) / 1e6;
  const double now_ms = static_cast<double>(now_ns - snapshot.meta.origin_ns) / 1e6;
  for (const StepDiagnosis& s : rep.steps)  // a step still open ends at now: the next line has it
    if (s.window_end_ms > since_ms && s.window_end_ms < now_ms) recent.steps.push_back(s);
  l.steps = static_cast<int>(recent.steps.size());
  if (l.steps == 0) return l;
  l.first_step = first_step;
  l.last_step = first_step + l.steps - 1;
  const double span_ms = recent.steps.back().window_end_ms - recent.steps.front().window_begin_ms;
  l.steps_per_s = span_ms > 0 ? 1000.0 * l.steps / span_ms : 0;
  l.headline = make_headline(recent, StartupSteps{});
  return l;
}

namespace {
// The steps' time not spent waiting (input, submission, unattributed): the loop's own work — its compute,
// or the device's when the loop waits on it — as far as host records tell.
double own_work(const Headline& h) { return std::max(0.0, 1.0 - h.input - h.submission - h.unattributed); }
}  // namespace

std::string live_text(const LiveLine& l) {
  const auto clock = fmt::format("{:02}:{:02}:{:02}", static_cast<long>(l.elapsed_s) / 3600, static_cast<long>(l.elapsed_s) / 60 % 60,
                                 static_cast<long>(l.elapsed_s) % 60);
  if (l.steps == 0) return fmt::format("stalldx live {}: no step ended since the last line", clock);
  const Headline& h = l.headline;
  return fmt::format("stalldx live {}: steps {}-{} ({:.1f}/s): input {:.0f} % (retrieval {:.0f} %, decoding {:.0f} %{}), submission {:.0f} %, "
                     "unattributed {:.0f} %, the steps' own work {:.0f} %{}",
                     clock, l.first_step, l.last_step, l.steps_per_s, 100 * h.input, 100 * h.retrieval, 100 * h.decoding,
                     h.unsplit >= 0.005 ? fmt::format(", not split {:.0f} %", 100 * h.unsplit) : "", 100 * h.submission,
                     100 * h.unattributed, 100 * own_work(h), l.device_windows > 0 ? fmt::format(" [device windows so far: {}]", l.device_windows) : "");
}

std::string live_json(const LiveLine& l) {
  nlohmann::ordered_json j;
  j["elapsed_s"] = l.elapsed_s;
  j["steps"] = l.steps;
  if (l.steps > 0) {
    const Headline& h = l.headline;
    j["first_step"] = l.first_step;
    j["last_step"] = l.last_step;
    j["steps_per_s"] = l.steps_per_s;
    j["bound"] = bound_name(h.bound, false);
    j["share"] = {{"input", h.input}, {"retrieval", h.retrieval}, {"decoding", h.decoding}, {"unsplit", h.unsplit}, {"submission", h.submission},
                  {"unattributed", h.unattributed}, {"own_work", own_work(h)}};
  }
  j["device_windows"] = l.device_windows;
  return j.dump();
}

}  // namespace stalldx::diagnose
