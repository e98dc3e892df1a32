// The headline weighs time, not steps: a run whose loop waited on input 86 % of its steady time is
// input-bound even when most of its steps, counted one by one, were device-bound (bursty input: a few
// long waits, many short steps). Shares are of the steady windows after start-up.
#include "headline.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace stalldx::diagnose {

namespace {
double pct(double share) { return 100 * share; }
}  // namespace

Headline make_headline(const Report& rep, const StartupSteps& startup, const std::set<std::int64_t>& evaluation) {
  Headline h;
  const bool device = rep.coverage.device_records;
  double window = 0, busy = 0;
  std::array<double, kClassCount> cls{};
  double unsplit_ms = 0, starved_ms = 0;
  int skip = startup.count;
  for (const StepDiagnosis& s : rep.steps) {
    if (s.warmup) continue;
    if (skip > 0) { --skip; continue; }
    if (evaluation.count(s.step) > 0) { ++h.evaluation_steps; continue; }
    window += s.window_ms;
    busy += s.busy_ms;
    for (int c = 0; c < kClassCount; ++c) cls[c] += s.class_ms[c];
    for (const CauseShare& c : s.causes) {
      if (unsplit_input(c.cause)) unsplit_ms += c.ms;
      if (c.cause == Cause::consumer_starved) starved_ms += c.ms;
    }
  }
  if (window <= 0) {
    h.text = rep.steps.empty() ? "no steps found: nothing to weigh" : "no steady-state steps: nothing to weigh";
    return h;
  }
  h.after_startup = startup.count > 0;
  h.retrieval = cls[static_cast<int>(StallClass::retrieval)] / window;
  h.decoding = cls[static_cast<int>(StallClass::decoding)] / window;
  h.unsplit = unsplit_ms / window;
  h.unattributed = std::max(0.0, cls[static_cast<int>(StallClass::unattributed)] / window - h.unsplit);
  h.input = h.retrieval + h.decoding + h.unsplit;
  h.submission = cls[static_cast<int>(StallClass::submission)] / window;
  if (!device) {
    h.starved = starved_ms / window;
    h.submission = std::max(0.0, h.submission - h.starved);
  }
  std::string of = h.after_startup ? "steady time after start-up" : "steady time";
  if (h.evaluation_steps > 0)
    of += fmt::format(" outside the {} step{} that ran an evaluation pass", h.evaluation_steps, h.evaluation_steps == 1 ? "" : "s");
  std::string split = fmt::format("retrieval {:.0f} %, decoding {:.0f} %", pct(h.retrieval), pct(h.decoding));
  if (pct(h.unsplit) >= 0.5)  // waits whose producers left no records: input, of a kind not known
    split = pct(h.retrieval + h.decoding) < 0.5
                ? std::string("not split into retrieval and decoding: its producers left no records")
                : split + fmt::format(", not split {:.0f} % (its producers left no records)", pct(h.unsplit));
  if (device) {
    h.busy = std::min(1.0, busy / window);
    const double top = std::max({h.input, h.submission, h.unattributed});
    h.bound = h.input + h.submission + h.unattributed < kKeepsUpShare ? Bound::device
              : top == h.input                                        ? Bound::input
              : top == h.submission                                   ? Bound::submission
                                                                      : Bound::unattributed;
  } else {
    const double own = std::max(0.0, 1 - h.input - h.submission - h.unattributed);
    const double top = std::max({own, h.input, h.submission});
    h.bound = top == h.input ? Bound::input : top == h.submission ? Bound::submission : Bound::loop;
  }
  const char* name = bound_name(h.bound, rep.coverage.standin);
  switch (h.bound) {
    case Bound::input:
      h.text = fmt::format("{}: the loop waited on input {:.0f} % of {} ({}){}", name, pct(h.input), of, split,
                           device ? fmt::format(", device busy {:.0f} %", pct(h.busy)) : std::string());
      break;
    case Bound::device:
      h.text = fmt::format("{}: the {} was busy {:.0f} % of {}; the loop waited on input {:.1f} % ({})", name,
                           rep.coverage.standin ? "consumer" : "device", pct(h.busy), of, pct(h.input), split);
      break;
    case Bound::submission:
      h.text = fmt::format("{}: the {} idled on the host's CUDA calls and launches {:.0f} % of {}; input {:.1f} %{}", name,
                           device ? "device" : "loop", pct(h.submission), of, pct(h.input),
                           device ? fmt::format(", device busy {:.0f} %", pct(h.busy)) : std::string());
      break;
    case Bound::unattributed:
      h.text = fmt::format("{}: the device idled {:.0f} % of {} while the loop was outside any range that says why; input {:.1f} %",
                           name, pct(h.unattributed), of, pct(h.input));
      break;
    case Bound::loop:
      h.text = fmt::format("{}: the loop's own work took {:.0f} % of {}{} and it waited on input {:.1f} % ({}); no device records, so "
                           "whether the GPU is the limit is not known",
                           name, pct(std::max(0.0, 1 - h.input - h.submission - h.unattributed)), of,
                           pct(h.starved) >= 0.5 ? fmt::format(" ({:.0f} % of it runnable, waiting for a CPU: a busy host)", pct(h.starved)) : "",
                           pct(h.input), split);
      break;
    case Bound::unknown: break;
  }
  return h;
}

}  // namespace stalldx::diagnose
