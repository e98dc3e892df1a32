#include <fmt/format.h>

#include <csignal>
#include <iostream>
#include <memory>

#include "commands.h"
#include "diagnosis.h"
#include "generator.h"
#include "run_options.h"
#include "run_report.h"
#include "runner.h"
#include "stalldx/trace_io.h"

namespace stalldx::cli {

namespace {
struct RunArgs {
  pipeline::RunConfig config;
  bool json = false;
};

int signal_exit_code() { return stop_signal() == SIGTERM ? 143 : 130; }
}  // namespace

Action add_run_command(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand("run", "run the reference input pipeline and report throughput (and, profiled, a trace)");
  add_run_options(*sub, a->config);
  sub->add_flag("--json", a->json, "print the report as JSON");
  return [a] {
    pipeline::RunConfig& c = a->config;
    if (Status st = pipeline::validate(c); !st.is_ok()) {
      fmt::print(stderr, "stalldx run: {}\n", st.message());
      return 2;
    }
    if (!c.trace.empty()) {
      if (Status st = check_writable(c.trace); !st.is_ok()) {
        fmt::print(stderr, "stalldx run: {}\n", st.message());
        return 2;
      }
    }
    if (c.data.empty()) {
      if (Status st = datasets::ensure_default_dataset(c.data, true); !st.is_ok()) {
        fmt::print(stderr, "stalldx run: cannot make the default dataset: {}\n", st.message());
        return 1;
      }
    }
    pipeline::RunResult r;
    Status st = pipeline::run_pipeline(c, r, &stop_requested());
    if (!r.device_notice.empty()) fmt::print(stderr, "stalldx: {}\n", r.device_notice);
    int rc = 0;
    if (!st.is_ok()) {
      fmt::print(stderr, "stalldx run: {}\n", st.message());
      rc = st.code() == Status::Code::invalid_argument ? 2 : 1;
      if (r.steps_completed == 0) return rc;
    }
    // Profiled: the diagnosis of this very run follows the measurements.
    if (a->json) {
      nlohmann::json j = run_report_json(r);
      if (r.has_trace) j["diagnosis"] = nlohmann::json::parse(diagnose::report_json(diagnose::diagnose(r.trace)));
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << run_report_text(r);
      if (r.has_trace) std::cout << "\n" << diagnose::report_text(diagnose::diagnose(r.trace), true);
    }
    if (r.has_trace && !c.trace.empty()) {
      if (Status ws = write_trace_file(r.trace, c.trace); !ws.is_ok()) {
        fmt::print(stderr, "stalldx run: {}\n", ws.message());
        return 1;
      }
      if (!a->json) fmt::print("  trace   {} (open in ui.perfetto.dev)\n", c.trace);
    }
    if (r.interrupted) {
      fmt::print(stderr, "stalldx run: interrupted after {} steps\n", r.steps_completed);
      return signal_exit_code();
    }
    return rc;
  };
}

}  // namespace stalldx::cli
