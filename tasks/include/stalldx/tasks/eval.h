// `stalldx eval SCENARIOS.tsv` as a library call: runs every scenario as a child `stalldx run --config
// ... --trace ...` (argv, no shell: any path works), diagnoses each trace and scores it against the
// expected class; the confusion matrix and per-scenario accuracy are written to OUT and returned.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "stalldx/diagnose/evaluation.h"
#include "stalldx/record/sampling.h"
#include "stalldx/status.h"
#include "stalldx/stop.h"

namespace stalldx::tasks {

struct Scenario {
  std::string name, config;
  diagnose::Expectation expect;
};

// TSV: name<TAB>config<TAB>expected; '#' comments. A relative config path is found from the current
// folder, else from the list's folder or the nearest folder above it (Scenario::config: the path found).
Status load_scenarios(const std::string& path, std::vector<Scenario>& out);

struct EvalOptions {
  std::string scenarios;            // the TSV
  std::string stalldx;              // the stalldx executable that runs each scenario
  std::string out = "eval-out";
  std::string data;                 // dataset for every scenario ("" = each config's own / the built-in set)
  std::string only;                 // run only the scenario of this name
  int keep_steps = 0;               // also write NAME.trimmed.json with this many steady steps (0 = no)
  double min_accuracy = 0.95;
  // Each scenario runs under `stalldx record` as `stalldx run --nvtx-only` (its NVTX ranges and the
  // injected CUPTI records, as any program would be seen), diagnosed with the config's warm-up.
  bool record = false;
  // With `record`: each scenario also runs natively (NAME.native.json) and the recorded diagnosis is
  // compared with the native one step by step (EvalResult::agreements).
  bool against_native = false;
  // With `record`: `stalldx record`'s own options for every scenario ("--sample 5/20"), split at spaces.
  std::string record_args;
  // Each scenario's full trace (the native one under against_native) also seen as a recording sampled
  // by this plan would have seen it (record::sampled_view), that diagnosis compared with the full one
  // on the same steps.
  std::optional<record::SamplePlan> sampled_view;
};

struct EvalResult {
  std::vector<diagnose::ScenarioScore> scores;     // of the run each scenario was scored on (recorded under --record)
  std::vector<diagnose::Agreement> agreements;     // against_native: recorded vs native, per scenario
  std::vector<diagnose::ScenarioScore> native_scores;  // against_native: the native runs' scores
  std::vector<std::string> failures;  // "scenario: why" (run failed, scored below min_accuracy)
  bool interrupted = false;
  std::string confusion_text, confusion_json;
  std::string agreement_text;                      // one line per scenario (against_native), else empty
  std::vector<diagnose::Agreement> view_agreements;  // sampled_view: full vs its sampled view, per scenario
  std::string view_text;                           // one line per scenario (sampled_view), else empty
};

// Errors: invalid_argument (bad list), io_error (results not written). A scenario that fails or scores
// low is a failure in `result`, not an error. `log` (may be empty) receives progress lines.
Status run_eval(const EvalOptions& options, EvalResult& result, const StopFlag* stop = nullptr,
                const std::function<void(const std::string&)>& log = {});

}  // namespace stalldx::tasks
