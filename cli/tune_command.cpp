// `stalldx tune`: options and printing only; the procedure is tasks::run_tune.
#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "run_options.h"
#include "stalldx/tasks/tune.h"

namespace stalldx::cli {

Action add_tune_command(CLI::App& app) {
  auto o = std::make_shared<tasks::TuneOptions>();
  CLI::App* sub = app.add_subcommand("tune", "find the fewest workers and shallowest prefetch within 2% of the best img/s, from one profile and few runs");
  sub->footer("Manual: docs/settings.md");
  sub->add_option("--workers", o->workers, "worker counts it may choose from, comma-separated")->delimiter(',')->capture_default_str();
  sub->add_option("--prefetch", o->prefetch, "prefetch depths it may choose from, comma-separated")->delimiter(',')->capture_default_str();
  sub->add_option("--repeat", o->repeat, "unprofiled runs per measured point (median)")->capture_default_str()->check(CLI::Range(1, 100));
  sub->add_option("--tolerance", o->tolerance, "within this fraction of the best counts as as good")->capture_default_str()->check(finite_in(0.0, 0.5));
  add_run_options(*sub, o->base, OptionSet::sweep);
  sub->add_option("--start-workers", o->base.workers, "workers of the profiled run")->capture_default_str()->check(CLI::Range(1, 1024));
  return [o] {
    tasks::TuneResult r;
    const Status st = tasks::run_tune(*o, r, &stop_flag(), [](const tasks::TuneRun& run) {
      note("stalldx tune: {} workers, prefetch {}: {}{}\n", run.workers, run.prefetch,
                 run.profiled ? std::string("profiled") : fmt::format("{:.0f} img/s", run.images_per_second), run.profiled ? "" : "");
    });
    if (!st.is_ok()) return fail("tune", st);
    if (r.interrupted) return stop_flag().exit_code();
    return print_checked("tune", tasks::tune_text(r)) ? 0 : 1;
  };
}

}  // namespace stalldx::cli
