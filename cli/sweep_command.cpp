// `stalldx sweep`: options and printing only; the procedure is tasks::run_sweep.
#include <fmt/format.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "commands.h"
#include "run_options.h"
#include "stalldx/tasks/sweep.h"

namespace stalldx::cli {

namespace {
struct SweepArgs {
  tasks::SweepOptions options;
  bool json = false;
};

void print_progress(bool tty, const tasks::SweepProgress& p) {
  const double eta = p.done ? p.elapsed_s / static_cast<double>(p.done) * static_cast<double>(p.total - p.done) : 0;
  if (tty) {
    const int width = 30, filled = static_cast<int>(width * p.done / std::max<std::size_t>(1, p.total));
    note("\r[{}{}] {}/{} points, ETA {:.0f}s  {}\x1b[K", std::string(filled, '#'), std::string(width - filled, '.'), p.done,
               p.total, eta, p.last);
    if (p.done == p.total) note("\n");
  } else {
    note("sweep: {}/{} points done ({}), ETA {:.0f}s\n", p.done, p.total, p.last, eta);
  }
}
}  // namespace

Action add_sweep_command(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  tasks::SweepOptions& o = a->options;
  CLI::App* sub = app.add_subcommand("sweep", "measure img/s over worker x prefetch settings (unprofiled) and diagnose each (profiled)");
  sub->footer("Manual: docs/settings.md");
  sub->add_option("--workers", o.workers, "worker counts, comma-separated")->delimiter(',')->capture_default_str();
  sub->add_option("--prefetch", o.prefetch, "prefetch depths, comma-separated")->delimiter(',')->capture_default_str();
  sub->add_option("--repeat", o.repeat, "unprofiled runs per point (median)")->capture_default_str();
  sub->add_option("--out", o.out, "folder for sweep.csv, sweep.json, sweep.svg")->capture_default_str();
  sub->add_flag("--resume", o.resume, "skip the points already in OUT/sweep.csv (the options must be the same)");
  sub->add_flag("--json", a->json, "print the results as JSON");
  add_run_options(*sub, o.base, OptionSet::sweep);
  return [a] {
    const bool tty = isatty(2) != 0;
    tasks::SweepResult r;
    const Status st = tasks::run_sweep(a->options, r, &stop_flag(), [tty](const tasks::SweepProgress& p) { print_progress(tty, p); });
    if (!st.is_ok()) return fail("sweep", st);
    if (r.resumed > 0)
      note("stalldx sweep: resumed, {} points were already measured{}\n", r.resumed,
                 r.malformed_rows ? fmt::format(" ({} malformed rows ignored)", r.malformed_rows) : "");
    if (r.interrupted) {
      note("\nstalldx sweep: interrupted; {} points kept in {}/sweep.csv (--resume continues)\n", r.points.size(), a->options.out);
      return stop_flag().exit_code();
    }
    const std::string out = a->json ? diagnose::sweep_json(r.points, r.recommendation) + "\n"
                                    : fmt::format("{}\nrecommendation: {}\nresults: {}\n", diagnose::sweep_table(r.points),
                                                  r.recommendation.text, fmt::join(r.files, ", "));
    return print_checked("sweep", out) ? 0 : 1;
  };
}

}  // namespace stalldx::cli
