#include <fmt/format.h>
#include <unistd.h>

#include <memory>

#include "commands.h"
#include "run_options.h"
#include "stalldx/datasets/generator.h"
#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/output_file.h"
#include "stalldx/pipeline/runner.h"
#include "stalldx/output_claim.h"
#include "stalldx/ranks/world.h"
#include "stalldx/tasks/run_report.h"
#include "stalldx/trace_io.h"

namespace stalldx::cli {

namespace {
struct RunArgs {
  RunConfig config;
  bool json = false;
  std::string html;
};
}  // namespace

Action add_run_command(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand("run", "run the reference input pipeline and report throughput (and, profiled, a trace)");
  sub->footer("Manual: docs/run.md; every option: docs/configuration.md");
  add_run_options(*sub, a->config);
  sub->add_flag("--json", a->json, "print the report as JSON");
  sub->add_option("--html", a->html, "also write the diagnosis as one self-contained HTML page (profiled runs)");
  return [a] {
    RunConfig& c = a->config;
    // An MPI job: every rank runs this; each becomes its own rank's config (shard, overrides, trace).
    ranks::World world;
    if (Status st = ranks::join(world); !st.is_ok()) return fail("run", st);
    struct Leave {
      ranks::World& w;
      bool abandoned = false;
      ~Leave() { ranks::leave(w, abandoned); }
    } leave{world};
    if (Status st = ranks::configure_rank(world, c); !st.is_ok()) return fail("run", st);
    if (Status st = pipeline::validate(c); !st.is_ok()) return fail("run", st);
    if (!c.trace.empty() && !c.profile)
      return fail("run", Status::invalid(fmt::format("--trace '{}' with --no-profile: nothing would be recorded; drop one of them", c.trace)));
    if (c.data.empty()) {  // made once, by rank 0 (the others wait for it)
      Status st = c.rank == 0 ? datasets::ensure_default_dataset(c.data, true, &stop_flag()) : Status::ok();
      if (Status b = ranks::barrier(world); st.is_ok() && !b.is_ok()) st = b;
      if (st.is_ok() && c.rank != 0) st = datasets::ensure_default_dataset(c.data, false, &stop_flag());
      if (!st.is_ok()) return fail("run", Status::io(fmt::format("cannot make the default dataset: {}", st.message())));
    }
    OutputCheck trace_check{"trace", c.data};
    OutputClaim trace_claim;  // one writer per trace: a second run on this path is refused at its start
    if (!c.trace.empty()) {
      if (Status st = check_output_path(c.trace, trace_check); !st.is_ok()) return fail_input("run", st);
      if (Status st = trace_claim.claim(c.trace); !st.is_ok()) return fail_input("run", st);
    }
    if (!a->html.empty()) {
      if (!c.profile) return fail("run", Status::invalid(fmt::format("--html '{}' with --no-profile: there would be no diagnosis", a->html)));
      OutputCheck html_check{"HTML report", c.data};
      if (Status st = check_output_path(a->html, html_check); !st.is_ok()) return fail_input("run", st);
    }
    std::unique_ptr<pipeline::StepCollective> collective;
    if (Status st = ranks::make_step_collective(world, c, &stop_flag().requested, collective); !st.is_ok()) return fail("run", st);
    const std::string who = c.world_size > 1 ? fmt::format(" (rank {} of {}, pid {})", c.rank, c.world_size, getpid()) : "";
    pipeline::RunResult r;
    // Progress on stderr: where the run is (also what the signal tests wait for before interrupting).
    Status st = pipeline::run_pipeline(c, r, &stop_flag().requested, [&c, &r, &who](pipeline::RunPhase phase) {
      if (phase == pipeline::RunPhase::started) {
        for (const std::string& n : r.device.notes) note("stalldx run: note: {}\n", n);
        note("stalldx run{}: started ({} warm-up + {} steps)\n", who, c.warmup, c.steps);
      } else {
        note("stalldx run{}: warm-up done, measuring {} steps\n", who, c.steps);
      }
    }, collective.get());
    if (r.has_trace && world.mpi) ranks::describe(world, r.trace.meta.config);
    leave.abandoned = r.stuck_in_collective_step >= 0;
    if (!r.device_notice.empty()) note("stalldx: {}\n", r.device_notice);
    int rc = 0;
    if (!st.is_ok()) {
      rc = fail("run", st);
      if (r.steps_completed == 0 && !r.has_trace) return rc;  // what was recorded is written (marked), even from the first step
    }
    // Ranks: one line each; only rank 0 (or a run alone) prints the full report and diagnosis. Every
    // rank writes its trace: `stalldx diagnose out.rank*.json` reads them together.
    if (c.world_size > 1 && !print_checked("run", tasks::rank_line(r))) rc = 1;
    const bool report = c.rank == 0;
    if (report) {
      // Profiled: the diagnosis of this very run follows the measurements.
      const diagnose::Report rep = r.has_trace ? diagnose::diagnose(r.trace) : diagnose::Report{};
      tasks::ReportForms forms;
      forms.json = a->json;
      forms.html = a->html;
      forms.source = c.trace.empty() ? std::string("stalldx run") : c.trace;
      if (!print_checked("run", tasks::run_stdout(r, r.has_trace ? &rep : nullptr, forms))) rc = 1;
      if (r.has_trace)
        if (Status ws = tasks::write_report_files(rep, forms); !ws.is_ok()) rc = fail("run", ws);
    }
    if (r.has_trace && !c.trace.empty()) {
      if (Status ws = write_trace_file(r.trace, c.trace); !ws.is_ok()) return fail("run", ws);
      if (report && !a->json)
        if (!print_checked("run", fmt::format("  trace   {}{} (open in ui.perfetto.dev)\n", c.trace, trace_check.replaced ? " (replaced the file that was there)" : "")))
          rc = 1;
      if (report && !a->json && c.world_size > 1)  // where the answer across ranks is
        if (!print_checked("run", fmt::format("  ranks   stalldx diagnose {} names each step's straggler\n", ranks::rank_trace_pattern(c.trace, c.rank))))
          rc = 1;
    }
    if (r.interrupted) {
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
