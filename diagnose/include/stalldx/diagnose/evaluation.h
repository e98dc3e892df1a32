// Verdict accuracy on induced stalls: what each scenario should give per step, the score of a
// diagnosis against it, and the confusion matrix over scenarios. Plus trimming a trace to a few steps.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/status.h"

namespace stalldx::diagnose {

// "retrieval" — every steady step; or "alternate:N:R=a:b" — steps with step % N == R expect a, others b.
// Class names: retrieval, decoding, submission, device-bound (consumer-bound counts as device-bound).
// What a scenario induces, read once from its text ("retrieval", "alternate:4:3=retrieval:device-bound").
struct Expectation {
  std::string spec;
  int period = 0, residue = 0;
  Verdict on = Verdict::device_bound, off = Verdict::device_bound;
  static Status parse(const std::string& spec, Expectation& out);
  Verdict expected(std::int64_t step) const;
};

struct ScenarioScore {
  std::string name, expected;
  int steady = 0, correct = 0;
  double accuracy = 0;
  std::vector<std::string> misses;                            // "step 7: expected retrieval, got decoding (...)"
  std::map<std::pair<Verdict, Verdict>, int> cells;          // (expected, verdict) -> steps
};

ScenarioScore score(const std::string& name, const Report& report, const Expectation& expectation);

// Per-step agreement of two diagnoses of one scenario (e.g. its native trace and the same program seen
// by `stalldx record`): steady steps present in both, matched by step number, compared by class.
struct Agreement {
  std::string name;
  int steps = 0, same = 0;
  double rate = 0;
  std::vector<std::string> differ;  // "step 7: native retrieval, recorded decoding"
};
Agreement agreement(const std::string& name, const Report& native, const Report& recorded);
// Confusion matrix (induced class x verdict over steady-state steps) and per-scenario accuracy.
std::string confusion_text(const std::vector<ScenarioScore>& scores);
std::string confusion_json(const std::vector<ScenarioScore>& scores);
// One self-contained HTML page: per-scenario accuracy, the confusion matrix, the missed steps.
std::string eval_html(const std::vector<ScenarioScore>& scores);

// A copy of `trace` keeping `steps` steady-state steps from its first steady step (plus the step before
// as warm-up, so the first kept window is measured as in the full trace), the producer work on their
// batches and the device work of their windows; counters are thinned to at most 2,000.
Trace trim_steps(const Trace& trace, int steps);

}  // namespace stalldx::diagnose
