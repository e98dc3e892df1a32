// `stalldx capture PID [--steps K]`: options and printing only; the procedure is tasks::request_capture.
#include <memory>

#include "commands.h"
#include "stalldx/tasks/capture.h"

namespace stalldx::cli {

Action add_capture_command(CLI::App& app) {
  struct Args {
    std::int64_t pid = 0, steps = 5;
  };
  auto a = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand(
      "capture", "ask a program running under `stalldx record --on-demand` (or --sample) for the device records of its next steps");
  sub->add_option("pid", a->pid, "the recorded program's process id (or its stalldx record's)")->required()->check(CLI::Range(std::int64_t{1}, std::int64_t{4194304}, "a process id (1-4194304)"));
  sub->add_option("--steps", a->steps, "how many steps to record, from the next one")->capture_default_str()->check(CLI::Range(1, 1000000));
  sub->footer("Example: stalldx record --on-demand -- python train.py &   then   stalldx capture $! --steps 10\n"
              "Manual: docs/record.md");
  return [a] {
    tasks::CaptureRequest r;
    if (Status st = tasks::request_capture(a->pid, a->steps, r); !st.is_ok()) return fail_input("capture", st);
    note("stalldx capture: asked process {} ({}) for the device records of its next {} step{}; they are in the trace when it ends\n", r.pid,
         r.plan, a->steps, a->steps == 1 ? "" : "s");
    return 0;
  };
}

}  // namespace stalldx::cli
