#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "run_options.h"
#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/diagnose/ranks.h"
#include "stalldx/diagnose/whatif.h"
#include "stalldx/output_file.h"
#include "stalldx/record/kineto.h"
#include "stalldx/trace_io.h"

namespace stalldx::cli {

namespace {
struct DiagnoseArgs {
  std::vector<std::string> traces;
  std::string svg, html;
  bool json = false, no_summaries = false;
  std::vector<int> what_if;
  diagnose::Thresholds th;
};
}  // namespace

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

namespace {
// Several traces: the ranks of one MPI job, read one at a time and reduced (memory: the largest rank).
int diagnose_ranks(const std::vector<std::string>& files, const diagnose::Thresholds& th, bool json, const std::string& svg,
                   const std::string& html) {
  diagnose::CrossRankAccumulator acc;
  bool standin = false;
  std::vector<std::string> lines;
  for (const std::string& f : files) {
    Trace t;
    record::KinetoReport kineto;
    bool was_kineto = false;
    note("stalldx diagnose: reading {}\n", f);
    if (Status st = record::read_any_trace(f, record::RoleMap::defaults(), t, kineto, was_kineto); !st.is_ok()) return fail_input("diagnose", st);
    diagnose::RankSteps r;
    if (Status st = diagnose::rank_steps(t, f, th, r); !st.is_ok()) return fail_input("diagnose", st);
    standin = standin || r.standin;
    lines.push_back(diagnose::rank_steps_line(r));
    if (Status st = acc.add(r); !st.is_ok()) return fail_input("diagnose", st);
  }
  const diagnose::CrossRankReport rep = acc.finish();
  exit_on_signal(false);
  std::string out;
  if (json) {
    out = diagnose::cross_rank_json(rep, standin) + "\n";
  } else {
    for (const std::string& l : lines) out += l;
    out += diagnose::cross_rank_text(rep, standin);
  }
  if (!print_checked("diagnose", out)) return 1;
  if (!svg.empty())
    if (Status st = write_file_atomic(svg, diagnose::cross_rank_svg(rep, standin)); !st.is_ok()) return fail("diagnose", st);
  if (!html.empty())
    if (Status st = write_file_atomic(html, diagnose::cross_rank_html(rep, lines, standin)); !st.is_ok()) return fail("diagnose", st);
  return 0;
}
}  // namespace

Action add_diagnose_command(CLI::App& app) {
  auto a = std::make_shared<DiagnoseArgs>();
  CLI::App* sub = app.add_subcommand("diagnose", "give every step of a stalldx trace a verdict, with evidence");
  sub->add_option("traces", a->traces, "trace file (stalldx run --trace, stalldx record, torch.profiler); several: one per rank of an "
                                       "MPI job (out.rank*.json), diagnosed across ranks")->required();
  sub->add_flag("--json", a->json, "print the report as JSON");
  sub->add_option("--svg", a->svg, "write a per-step busy + stall chart as SVG");
  sub->add_option("--html", a->html, "write the report as one self-contained HTML page");
  sub->add_flag("--no-summaries", a->no_summaries, "leave out the summary tables");
  sub->add_option("--what-if", a->what_if, "predict steady img/s at these worker counts (comma-separated) from this run's costs")
      ->delimiter(',')->check(CLI::Range(1, 1024));
  add_threshold_options(*sub, a->th);
  return [a] {
    for (const std::string* path : {&a->svg, &a->html}) {
      if (path->empty()) continue;
      OutputCheck check{path == &a->svg ? "SVG" : "HTML report"};
      if (Status st = check_output_path(*path, check); !st.is_ok()) return fail_input("diagnose", st);
    }
    exit_on_signal(true);  // reading and diagnosing write nothing: Ctrl-C ends them at once
    if (a->traces.size() > 1) {
      if (!a->what_if.empty())
        return fail_input("diagnose", Status::invalid("--what-if reads one trace; across ranks: the text, --json, --svg and --html"));
      return diagnose_ranks(a->traces, a->th, a->json, a->svg, a->html);
    }
    const std::string& trace = a->traces.front();
    Trace t;
    note("stalldx diagnose: reading {}\n", trace);
    record::KinetoReport kineto;
    bool was_kineto = false;
    if (Status st = record::read_any_trace(trace, record::RoleMap::defaults(), t, kineto, was_kineto); !st.is_ok())
      return fail_input("diagnose", st);
    if (was_kineto) {
      note("stalldx diagnose: torch.profiler trace: {} events → {} host ranges, {} CUDA calls, {} device records; {} CPU ops "
                         "folded into their parents; {} events not understood\n",
                 kineto.events, kineto.host_ranges, kineto.calls, kineto.device, kineto.folded_ops, kineto.not_understood);
      for (const std::string& n : kineto.notes) note("  note: {}\n", n);
    }
    const diagnose::Report rep = diagnose::diagnose(t, a->th);
    exit_on_signal(false);  // outputs: finish or fail cleanly
    std::string out = a->json ? diagnose::report_json(rep) + "\n" : diagnose::report_text(rep, !a->no_summaries);
    if (!a->what_if.empty()) {
      const diagnose::StageCosts costs = diagnose::measure_stage_costs(t);
      out += "\n" + diagnose::whatif_table(costs, diagnose::predict_curve(costs, a->what_if));
    }
    if (!print_checked("diagnose", out)) return 1;
    if (!a->svg.empty())
      if (Status st = write_file_atomic(a->svg, diagnose::report_svg(rep)); !st.is_ok()) return fail("diagnose", st);
    if (!a->html.empty())
      if (Status st = write_file_atomic(a->html, diagnose::report_html(rep, trace)); !st.is_ok()) return fail("diagnose", st);
    return 0;
  };
}

}  // namespace stalldx::cli
