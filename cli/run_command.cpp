#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "run_options.h"
#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/ranks/world.h"
#include "stalldx/tasks/run_job.h"
#include "stalldx/tasks/run_report.h"

namespace stalldx::cli {

namespace {
struct RunArgs {
  RunConfig config;
  bool json = false;
  std::string html;
};

// Rank 0 (or a run alone) prints the report and, profiled, the diagnosis of this very run; other ranks
// a line each. Every rank writes its trace (RunJob::write_trace): `stalldx diagnose out.rank*.json` reads
// them together.
int report_run(const tasks::RunJob& job, const pipeline::RunResult& r, const RunArgs& a) {
  const RunConfig& c = job.config();
  int rc = 0;
  if (c.world_size > 1 && !print_checked("run", tasks::rank_line(r))) rc = 1;
  const bool report = c.rank == 0;
  if (report) {
    const diagnose::Report rep = r.has_trace ? diagnose::diagnose(r.trace) : diagnose::Report{};
    tasks::ReportForms forms;
    forms.json = a.json;
    forms.html = a.html;
    forms.source = c.trace.empty() ? std::string("stalldx run") : c.trace;
    if (!print_checked("run", tasks::run_stdout(r, r.has_trace ? &rep : nullptr, forms))) rc = 1;
    if (r.has_trace)
      if (Status ws = tasks::write_report_files(rep, forms); !ws.is_ok()) rc = fail("run", ws);
  }
  return rc;
}

// After the trace is written: where it is (rank 0's report, not --json).
int trace_lines(const tasks::RunJob& job, const pipeline::RunResult& r, const RunArgs& a) {
  const RunConfig& c = job.config();
  int rc = 0;
  if (r.has_trace && !c.trace.empty() && c.rank == 0 && !a.json) {
    if (!print_checked("run", fmt::format("  trace   {}{} (open in ui.perfetto.dev)\n", c.trace, job.trace_replaced() ? " (replaced the file that was there)" : "")))
      rc = 1;
    if (c.world_size > 1)  // where the answer across ranks is
      if (!print_checked("run", fmt::format("  ranks   stalldx diagnose {} names each step's straggler\n", ranks::rank_trace_pattern(c.trace, c.rank))))
        rc = 1;
  }
  return rc;
}
}  // namespace

Action add_run_command(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand("run", "run the reference input pipeline and report throughput (and, profiled, a trace)");
  sub->footer("Manual: docs/run.md; every option: docs/configuration.md");
  add_run_options(*sub, a->config);
  sub->add_flag("--json", a->json, "print the report as JSON");
  sub->add_option("--html", a->html, "also write the diagnosis as one self-contained HTML page (profiled runs)");
  return [a, &app] {
    const CLI::Option* config = app.get_config_ptr();
    if (Status st = check_distinct_files({{"--config", config != nullptr && config->count() > 0 ? config->as<std::string>() : "", false},
                                          {"--trace", a->config.trace}, {"--html", a->html}});
        !st.is_ok())
      return fail_input("run", st);
    tasks::RunJob job({a->config, a->html, &stop_flag(), [](const std::string& line) { note("{}\n", line); }});
    bool input_error = false;
    if (Status st = job.open(input_error); !st.is_ok()) return input_error ? fail_input("run", st) : fail("run", st);
    pipeline::RunResult r;
    const Status st = job.run(r);
    if (!r.device_notice.empty()) note("stalldx: {}\n", r.device_notice);
    int rc = 0;
    if (!st.is_ok()) {
      rc = fail("run", st);
      if (r.steps_completed == 0 && !r.has_trace) return rc;  // what was recorded is written (marked), even from the first step
    }
    if (const int out = report_run(job, r, *a); out != 0) rc = out;
    if (Status ws = job.write_trace(r); !ws.is_ok()) return fail("run", ws);
    if (const int out = trace_lines(job, r, *a); out != 0) rc = out;
    if (r.interrupted) {
      const std::string who = job.who();
      if (r.stopped_by_rank >= 0) note("stalldx run{}: rank {} left; this rank stopped with it\n", who, r.stopped_by_rank);
      if (r.stuck_in_collective_step >= 0)
        note("stalldx run{}: stopped while waiting for the other ranks in step {}'s all-reduce (one never came)\n", who, r.stuck_in_collective_step);
      note("stalldx run: interrupted after {} steps\n", r.steps_completed);
      return stop_flag().exit_code();
    }
    return rc;
  };
}

}  // namespace stalldx::cli
