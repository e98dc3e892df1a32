// `stalldx record [options] -- CMD [ARGS...]` and `stalldx record --merge DIR`: options and printing
// only; the procedures are tasks::run_record / merge_record. Exits with CMD's exit code (127 when it
// could not start; 2 for bad options, before CMD starts; 1 when CMD succeeded but the recording failed).
#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "run_options.h"
#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/output_file.h"
#include "stalldx/tasks/record.h"

namespace stalldx::cli {

namespace {
struct RecordArgs {
  tasks::RecordOptions options;
  std::string roles, step, merge, sample;
  tasks::ReportForms forms;
  CLI::Option* sample_opt = nullptr;
  CLI::Option* live_opt = nullptr;
  bool no_python_hook = false, on_demand = false;
  diagnose::Thresholds th;
};
// CMD launched ranks: each rank's trace and its own verdicts, then the cross-rank report (as `stalldx
// diagnose X.rank*.json` prints it).
int print_ranks(const tasks::RecordResult& r, const RecordArgs& a) {
  for (const std::string& p : r.rank_traces) note("  rank trace: {}\n", p);
  const tasks::RanksReport ranks{*r.ranks, r.rank_lines, r.ranks_standin};
  tasks::ReportForms forms = a.forms;
  forms.source = r.trace_path;
  if (!print_checked("record", tasks::ranks_stdout(ranks, forms))) return r.exit_code() != 0 ? r.exit_code() : 1;
  if (Status st = tasks::write_ranks_files(ranks, forms); !st.is_ok()) fail("record", st);
  return r.exit_code();
}
}  // namespace

Action add_record_command(CLI::App& app, const std::vector<std::string>& command) {
  auto a = std::make_shared<RecordArgs>();
  CLI::App* sub = app.add_subcommand(
      "record", "run any program unmodified, record its NVTX ranges and CUDA activity (injection), and diagnose every step\n"
      "  stalldx record [OPTIONS] -- CMD [ARGS...]   (everything after -- is the command, as typed)");
  sub->add_option("--trace", a->options.trace, "where to write the merged trace")->capture_default_str();
  sub->add_option("--roles", a->roles, "TOML file mapping range names to roles ([[role]] match = \"regex\", role = \"...\")");
  sub->add_option("--step", a->step, "regular expression, found anywhere in a range name (as grep; ^ and $ anchor): those ranges are the steps");
  sub->add_flag("--no-cuda", [a](std::int64_t) { a->options.cuda = false; },
                "NVTX ranges only: no CUPTI records (host-side view; measures what the CUDA side costs)");
  sub->add_flag("--no-cuda-driver", [a](std::int64_t) { a->options.optional.driver = false; },
                "no CUPTI driver API records (lighter; kernels that libraries launch through the driver then have no call)");
  sub->add_flag("--no-cuda-sync", [a](std::int64_t) { a->options.optional.sync = false; },
                "no CUPTI synchronization records (lighter; the sync calls themselves are still recorded)");
  sub->add_flag("--cuda-every-call", [a](std::int64_t) { a->options.optional.every_call = true; },
                "record CUDA calls that only query state too (cudaGetLastError, cudaFuncGetAttributes, ...: heavier)");
  a->sample_opt = sub->add_option("--sample", a->sample,
                                  "device records (CUPTI) in windows: K/N records K steps in every N and detaches CUPTI between them "
                                  "(finalized: the program's CUDA calls pay nothing there); K/N+F after F full steps; "
                                  "alone: auto = every step of the first 50, then 5 in every 100")
                      ->expected(0, 1);
  a->live_opt = sub->add_option("--live", a->options.live_s,
                                "every this many seconds while the command runs, print one line: the time share by class and steps/s "
                                "(default 30 with --sample or --live-json, else off; 0: off; at least 1: each line merges the parts so far)")
                    ->check(CLI::Validator(
                        [](std::string& v) -> std::string {
                          double s = -1;
                          if (!CLI::detail::lexical_cast(v, s) || !(s == 0 || (s >= 1 && s <= 86400)))
                            return v + " is not 0 (off) or a number of seconds from 1 to 86400";
                          return {};
                        },
                        "0 or 1-86400"));
  sub->add_flag("--cupti-detach,!--no-cupti-detach", a->options.cupti_detach,
                "with --sample / --on-demand: finalize CUPTI between windows (the default; no cost there at all); "
                "--no-cupti-detach only turns its records off (CUPTI stays loaded: a launch-bound loop pays ~9 %, docs/measurements.md)");
  sub->add_flag("--on-demand", a->on_demand,
                "no device records until asked: `stalldx capture PID --steps K` records the next K steps (NVTX ranges throughout)");
  sub->add_option("--live-json", a->options.live_json, "append each live line to this file as JSON (one object a line)");
  sub->add_flag("--no-python-hook", a->no_python_hook,
                "do not load the PyTorch hook into Python programs (it marks DataLoader waits, loader work and loop iterations)");
  sub->add_flag("--keep-parts", a->options.keep_parts, "keep the per-process part files (their folder is printed)");
  sub->add_option("--merge", a->merge,
                  "merge a parts folder left behind (record killed, --keep-parts, a failed write) into --trace; no command")
      ->check(CLI::ExistingDirectory);
  sub->add_option("--kill-after", a->options.kill_after_s,
                  "a second Ctrl-C sends the command SIGTERM, and SIGKILL this many seconds later (a third: at once)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  add_report_options(*sub, a->forms);
  add_threshold_options(*sub, a->th);
  sub->footer("Example: stalldx record --trace train.json -- python train.py --epochs 1\n"
              "A long run: stalldx record --sample -- python train.py   (CUPTI in windows, detached between; a live line every 30 s)\n"
              "Ctrl-C is passed to the command; a second one ends it (SIGTERM, then SIGKILL after --kill-after).\n"
              "Manual: docs/record.md; PyTorch scripts: docs/pytorch.md");
  return [a, &command] {
    a->options.command = command;
    // Everything the user gave is checked before CMD starts (exit 2).
    if (a->merge.empty() == a->options.command.empty())
      return fail_input("record", Status::invalid(a->merge.empty() ? "no command: stalldx record [options] -- CMD [ARGS...]"
                                                                   : "--merge DIR takes no command"));
    if (!a->roles.empty())
      if (Status st = record::RoleMap::load(a->roles, a->options.roles); !st.is_ok()) return fail_input("record", st);
    if (!a->step.empty())
      if (Status st = NamePattern::compile(a->step, "--step", a->options.step); !st.is_ok()) return fail_input("record", st);
    a->options.roles_file = a->roles;
    if (a->on_demand && a->sample_opt->count() > 0) return fail_input("record", Status::invalid("--on-demand and --sample: choose one"));
    if (a->on_demand) a->options.sample.on_demand = true;
    if (a->sample_opt->count() > 0) {
      std::string error;
      if (!record::SamplePlan::parse(a->sample.empty() ? "auto" : a->sample, a->options.sample, error))
        return fail_input("record", Status::invalid("--sample " + error));
    }
    if (a->live_opt->count() == 0 && (a->options.sample.samples() || !a->options.live_json.empty())) a->options.live_s = 30;
    a->options.live = [](const std::string& line) { note("{}\n", line); };
    const std::string trace_path = tasks::record_trace_path(a->options);  // this rank's, under a launcher
    if (Status st = check_distinct_files({{"--roles", a->options.roles_file, false}, {"--trace", trace_path}, {"--svg", a->forms.svg},
                                          {"--html", a->forms.html}, {"--live-json", a->options.live_json}});
        !st.is_ok())
      return fail_input("record", st);
    for (const std::string* path : std::initializer_list<const std::string*>{&trace_path, &a->forms.svg, &a->forms.html, &a->options.live_json}) {
      if (path->empty()) continue;
      OutputCheck check{path == &a->forms.svg ? "SVG" : path == &a->forms.html ? "HTML report" : path == &a->options.live_json ? "live JSON" : "trace"};
      if (Status st = check_output_path(*path, check); !st.is_ok()) return fail_input("record", st);
    }
    a->options.inject_library = tasks::find_inject_library("");
    if (!a->no_python_hook) a->options.python_hook_dir = tasks::find_python_hook("");
    a->options.notice = [](const std::string& line) { note("stalldx record: {}\n", line); };
    a->options.thresholds = a->th;
    tasks::RecordResult r;
    const Status st = a->merge.empty() ? tasks::run_record(a->options, r, &stop_flag()) : tasks::merge_record(a->merge, a->options, r, &stop_flag());
    if (!st.is_ok()) return fail("record", st);
    note("{}", tasks::record_summary_text(r));
    if (!r.started) return r.exit_code();
    if (!r.recording_error.empty()) return tasks::record_exit_code(r);
    if (a->options.keep_parts) note("  parts kept in {}\n", r.parts_dir);
    note("  trace: {}\n", r.trace_path);
    if (r.ranks) return print_ranks(r, *a);
    const diagnose::Report rep = diagnose::diagnose(r.trace, a->th);
    tasks::ReportForms forms = a->forms;
    forms.source = r.trace_path;
    if (!print_checked("record", tasks::report_stdout(rep, forms))) return r.exit_code() != 0 ? r.exit_code() : 1;
    if (stop_flag().stopped() && r.merged_only) return stop_flag().exit_code();
    if (Status st = tasks::write_report_files(rep, forms); !st.is_ok()) fail("record", st);
    return r.exit_code();
  };
}

}  // namespace stalldx::cli
