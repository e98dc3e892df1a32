// `stalldx eval SCENARIOS.tsv`: options and printing only; the procedure is tasks::run_eval.
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "commands.h"
#include "run_options.h"
#include "stalldx/tasks/eval.h"

namespace stalldx::cli {

Action add_eval_command(CLI::App& app) {
  auto o = std::make_shared<tasks::EvalOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand("eval", "run induced-stall scenarios and score the verdicts (confusion matrix)");
  sub->footer("Manual: docs/settings.md");
  sub->add_option("scenarios", o->scenarios, "TSV: name, config, expected class (see configs/scenarios-*.tsv)")->required();
  sub->add_option("--out", o->out, "folder for traces, logs and the results")->capture_default_str();
  sub->add_option("--data", o->data, "dataset for every scenario (default: the built-in set)");
  sub->add_option("--only", o->only, "run only the scenario of this name");
  sub->add_option("--keep-steps", o->keep_steps, "also write NAME.trimmed.json with this many steady steps (0 = no)")
      ->check(CLI::Range(0, 1000000));
  sub->add_flag("--record", o->record, "run each scenario under `stalldx record` as `stalldx run --nvtx-only` (seen as any program would be)");
  sub->add_flag("--against-native", o->against_native,
                "with --record: also run each scenario natively and report per-step agreement of the two verdicts (agreement.txt)");
  sub->add_option("--record-args", o->record_args, "with --record: options for `stalldx record` (one string: \"--sample 5/20\")");
  auto view = std::make_shared<std::string>();
  sub->add_option("--sampled-view", *view,
                  "also diagnose each trace as a recording sampled by this plan (K/N, K/N+F) would have seen it, and report per-step "
                  "agreement with the full diagnosis on the same steps (agreement-sampled-view.txt)");
  sub->add_option("--min-accuracy", o->min_accuracy, "fail (exit 1) when a scenario scores below this")
      ->capture_default_str()->check(finite_in(0.0, 1.0));
  sub->add_flag("--json", *json, "print the results as JSON");
  return [o, json, view] {
    if (o->against_native && !o->record) return fail("eval", Status::invalid("--against-native needs --record"));
    if (!view->empty()) {
      record::SamplePlan plan;
      std::string error;
      if (!record::SamplePlan::parse(*view, plan, error) || !plan.samples() || plan.on_demand)
        return fail_input("eval", Status::invalid(error.empty() ? fmt::format("--sampled-view {}: a plan that samples: K/N or K/N+F", *view) : "--sampled-view " + error));
      o->sampled_view = plan;
    }
    std::error_code ec;
    o->stalldx = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    if (ec) return fail("eval", Status::internal("cannot find this executable (/proc/self/exe)"));
    tasks::EvalResult r;
    const Status st = tasks::run_eval(*o, r, &stop_flag(), [](const std::string& line) { note("stalldx eval: {}\n", line); });
    if (!st.is_ok()) return fail("eval", st);
    for (const std::string& f : r.failures) note("stalldx eval: {}\n", f);
    if (r.interrupted) {
      note("stalldx eval: interrupted: nothing in {} was replaced (the previous results, if any, stand)\n", o->out);
      return stop_flag().exit_code();
    }
    if (!print_checked("eval", *json ? r.confusion_json + "\n" : r.confusion_text + r.agreement_text + r.view_text)) return 1;
    return r.failures.empty() ? 0 : 1;
  };
}

}  // namespace stalldx::cli
