#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "commands.h"
#include "run_options.h"
#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/diagnose/evaluation.h"
#include "stalldx/diagnose/ranks.h"
#include "stalldx/rank_paths.h"
#include "stalldx/diagnose/whatif.h"
#include "stalldx/output_file.h"
#include "stalldx/record/kineto.h"
#include "stalldx/trace_io.h"

namespace stalldx::cli {

namespace {
struct DiagnoseArgs {
  std::vector<std::string> traces;
  tasks::ReportForms forms;
  std::vector<int> what_if;
  diagnose::Thresholds th;
  std::string trimmed_dir;  // write each trace cut to keep_steps steady steps here, same file name
  int keep_steps = 8;
};

// Where the trimmed copy of `input` goes: DIR/<its file name>, never the input itself.
Status trimmed_path(const std::string& dir, const std::string& input, std::string& out) {
  namespace fs = std::filesystem;
  std::string name = fs::path(input).filename().string();
  if (name.ends_with(".gz")) name.resize(name.size() - 3);  // written uncompressed
  out = (fs::path(dir) / name).string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::invalid(fmt::format("--trimmed {}: not a folder", dir));
  if (fs::exists(out, ec) && fs::equivalent(out, input, ec))
    return Status::invalid(fmt::format("--trimmed {}: would write over the trace it reads ({}); name another folder", dir, input));
  OutputCheck check{"trimmed trace"};
  return check_output_path(out, check);
}

// Writes `t` cut to `steps` steady steps (the step before kept as warm-up) beside the others in `dir`.
Status write_trimmed(const Trace& t, const std::string& dir, const std::string& input, int steps) {
  std::string out;
  if (Status st = trimmed_path(dir, input, out); !st.is_ok()) return st;
  if (Status st = write_trace_file(diagnose::trim_steps(t, steps), out); !st.is_ok()) return st;
  note("stalldx diagnose: wrote {} ({} steady steps of {})\n", out, steps, input);
  return Status::ok();
}
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

namespace {
// Several traces: the ranks of one MPI job, read one at a time and reduced (memory: the largest rank).
int diagnose_ranks(const std::vector<std::string>& files, const DiagnoseArgs& a) {
  const diagnose::Thresholds& th = a.th;
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
    if (!a.trimmed_dir.empty())
      if (Status st = write_trimmed(t, a.trimmed_dir, f, a.keep_steps); !st.is_ok()) return fail_input("diagnose", st);
    standin = standin || r.standin;
    lines.push_back(diagnose::rank_steps_line(r));
    if (Status st = acc.add(r); !st.is_ok()) return fail_input("diagnose", st);
  }
  const diagnose::CrossRankReport rep = acc.finish();
  exit_on_signal(false);
  const tasks::RanksReport ranks{rep, lines, standin};
  tasks::ReportForms forms = a.forms;
  forms.source = files.front();
  if (!print_checked("diagnose", tasks::ranks_stdout(ranks, forms))) return 1;
  if (Status st = tasks::write_ranks_files(ranks, forms); !st.is_ok()) return fail("diagnose", st);
  return 0;
}
}  // namespace

Action add_diagnose_command(CLI::App& app) {
  auto a = std::make_shared<DiagnoseArgs>();
  CLI::App* sub = app.add_subcommand("diagnose", "give every step of a stalldx trace a verdict, with evidence");
  sub->footer("Manual: docs/verdicts.md; torch.profiler traces: docs/torch-profiler.md; ranks: docs/ranks.md");
  sub->add_option("traces", a->traces, "trace file (stalldx run --trace, stalldx record, torch.profiler); several: one per rank of an "
                                       "MPI job (out.rank*.json), diagnosed across ranks")->required();
  add_report_options(*sub, a->forms);
  sub->add_option("--what-if", a->what_if, "predict steady img/s at these worker counts (comma-separated) from this run's costs")
      ->delimiter(',')->check(CLI::Range(1, 1024));
  sub->add_option("--trimmed", a->trimmed_dir, "also write each trace cut to --keep-steps steady steps into this folder (same file "
                                               "name; small enough to share or keep as test data)");
  sub->add_option("--keep-steps", a->keep_steps, "steady steps --trimmed keeps (the step before them too, as warm-up)")
      ->capture_default_str()->check(CLI::Range(1, 100000));
  add_threshold_options(*sub, a->th);
  return [a] {
    for (const std::string* path : {&a->forms.svg, &a->forms.html}) {
      if (path->empty()) continue;
      OutputCheck check{path == &a->forms.svg ? "SVG" : "HTML report"};
      if (Status st = check_output_path(*path, check); !st.is_ok()) return fail_input("diagnose", st);
    }
    if (Status st = expand_trace_folders(a->traces); !st.is_ok()) return fail_input("diagnose", st);
    if (!a->trimmed_dir.empty())  // every target checked before the first trace is read
      for (const std::string& f : a->traces) {
        std::string out;
        if (Status st = trimmed_path(a->trimmed_dir, f, out); !st.is_ok()) return fail_input("diagnose", st);
      }
    exit_on_signal(true);  // reading and diagnosing write nothing: Ctrl-C ends them at once
    if (a->traces.size() > 1) {
      if (!a->what_if.empty())
        return fail_input("diagnose", Status::invalid("--what-if reads one trace; across ranks: the text, --json, --svg and --html"));
      return diagnose_ranks(a->traces, *a);
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
    if (!a->trimmed_dir.empty())
      if (Status st = write_trimmed(t, a->trimmed_dir, trace, a->keep_steps); !st.is_ok()) return fail_input("diagnose", st);
    const diagnose::Report rep = diagnose::diagnose(t, a->th);
    exit_on_signal(false);  // outputs: finish or fail cleanly
    tasks::ReportForms forms = a->forms;
    forms.source = trace;
    std::string out = tasks::report_stdout(rep, forms);
    if (!a->what_if.empty()) {
      const diagnose::StageCosts costs = diagnose::measure_stage_costs(t, rep, a->th);  // the user's --warmup too
      out += "\n" + diagnose::whatif_table(costs, diagnose::predict_curve(costs, a->what_if));
    }
    if (!print_checked("diagnose", out)) return 1;
    if (Status st = tasks::write_report_files(rep, forms); !st.is_ok()) return fail("diagnose", st);
    return 0;
  };
}

}  // namespace stalldx::cli
