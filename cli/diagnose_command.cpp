#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "stalldx/tasks/diagnose_traces.h"
#include "run_options.h"
#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/output_file.h"

namespace stalldx::cli {

namespace {
struct DiagnoseArgs {
  tasks::DiagnoseOptions options;
  tasks::ReportForms forms;
};

}  // namespace

void add_report_options(CLI::App& sub, tasks::ReportForms& forms) {
  sub.add_flag("--json", forms.json, "print the report as JSON");
  sub.add_option("--svg", forms.svg, "write a per-step busy + stall chart as SVG");
  sub.add_option("--html", forms.html, "write the report as one self-contained HTML page");
  sub.add_flag_callback("--no-summaries", [&forms] { forms.summaries = false; }, "leave out the summary tables");
}

void add_threshold_options(CLI::App& sub, diagnose::Thresholds& th) {
  sub.add_option("--device-bound-ms", th.device_bound_ms, "stall at or under this (ms) is device-bound")
      ->capture_default_str()->check(finite_in(0.0, 1e6));
  sub.add_option("--device-bound-fraction", th.device_bound_fraction, "... or under this fraction of the step window")
      ->capture_default_str()->check(finite_in(0.0, 1.0));
  sub.add_option("--dominant-share", th.dominant_share, "share of the stall a class needs to name the verdict")
      ->capture_default_str()->check(finite_in(0.0, 1.0));
  sub.add_option("--warmup", th.warmup_steps, "warm-up steps (-1 = from the trace's config)")
      ->capture_default_str()->check(CLI::Range(-1, 100000));
}

Action add_diagnose_command(CLI::App& app) {
  auto a = std::make_shared<DiagnoseArgs>();
  CLI::App* sub = app.add_subcommand("diagnose", "give every step of a stalldx trace a verdict, with evidence");
  sub->footer("Manual: docs/verdicts.md; torch.profiler traces: docs/torch-profiler.md; ranks: docs/ranks.md");
  sub->add_option("traces", a->options.traces, "trace file (stalldx run --trace, stalldx record, torch.profiler); several: one per rank of an "
                                       "MPI job (out.rank*.json), diagnosed across ranks")->required();
  add_report_options(*sub, a->forms);
  sub->add_option("--what-if", a->options.what_if, "predict steady img/s at these worker counts (comma-separated) from this run's costs")
      ->delimiter(',')->check(CLI::Range(1, 1024));
  sub->add_option("--trimmed", a->options.trimmed_dir, "also write each trace cut to --keep-steps steady steps into this folder (same file "
                                               "name; small enough to share or keep as test data)");
  sub->add_option("--keep-steps", a->options.keep_steps, "steady steps --trimmed keeps (the step before them too, as warm-up)")
      ->capture_default_str()->check(CLI::Range(1, 100000));
  add_threshold_options(*sub, a->options.thresholds);
  return [a] {
    std::vector<NamedPath> files;
    for (const std::string& t : a->options.traces) files.push_back({"the trace read", t, false});
    files.push_back({"--svg", a->forms.svg});
    files.push_back({"--html", a->forms.html});
    if (Status st = check_distinct_files(files); !st.is_ok()) return fail_input("diagnose", st);
    for (const std::string* path : {&a->forms.svg, &a->forms.html}) {
      if (path->empty()) continue;
      OutputCheck check{path == &a->forms.svg ? "SVG" : "HTML report"};
      if (Status st = check_output_path(*path, check); !st.is_ok()) return fail_input("diagnose", st);
    }
    if (Status st = tasks::prepare_diagnose(a->options); !st.is_ok()) return fail_input("diagnose", st);
    a->options.notice = [](const std::string& line) { note("stalldx diagnose: {}\n", line); };
    exit_on_signal(true);  // reading and diagnosing write nothing: Ctrl-C ends them at once
    tasks::DiagnoseResult r;
    if (Status st = tasks::diagnose_traces(a->options, r); !st.is_ok()) return fail_input("diagnose", st);
    exit_on_signal(false);  // outputs: finish or fail cleanly
    tasks::ReportForms forms = a->forms;
    forms.source = r.source;
    if (r.ranks) {
      const tasks::RanksReport ranks{*r.ranks, r.rank_lines, r.ranks_standin};
      if (!print_checked("diagnose", tasks::ranks_stdout(ranks, forms))) return 1;
      if (Status st = tasks::write_ranks_files(ranks, forms); !st.is_ok()) return fail("diagnose", st);
      return 0;
    }
    std::string out = tasks::report_stdout(r.report, forms);
    if (!r.what_if_table.empty()) out += "\n" + r.what_if_table;
    if (!print_checked("diagnose", out)) return 1;
    if (Status st = tasks::write_report_files(r.report, forms); !st.is_ok()) return fail("diagnose", st);
    return 0;
  };
}

}  // namespace stalldx::cli
