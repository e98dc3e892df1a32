// stalldx: why does my input pipeline stall? Thin main: subcommands live in cli/*_command.cpp.
#include <csignal>

#include "commands.h"

namespace {
volatile std::sig_atomic_t g_signal = 0;
void on_signal(int sig) {
  g_signal = sig;
  stalldx::cli::stop_requested().store(true);
}
}  // namespace

namespace stalldx::cli {
std::atomic<bool>& stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}
int stop_signal() { return g_signal; }
}  // namespace stalldx::cli

int main(int argc, char** argv) {
  CLI::App app{"stalldx: per-step diagnosis of GPU input-pipeline stalls (retrieval, decoding, submission, device-bound)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "stalldx 0.1.0");
  // CLI11 reads config files at the top level only; subcommands fall through to it, and a file's
  // [run] / [sweep] table holds that subcommand's keys (= its long option names).
  app.allow_config_extras(CLI::config_extras_mode::error);  // an unknown key in a config is an error, not silence
  app.set_config("--config", "", "TOML file of options: a [run] or [sweep] table whose keys are long option names (see configs/)");
  stalldx::cli::Action run = stalldx::cli::add_run_command(app);
  stalldx::cli::Action dataset = stalldx::cli::add_dataset_command(app);
  stalldx::cli::Action diagnose = stalldx::cli::add_diagnose_command(app);
  stalldx::cli::Action eval = stalldx::cli::add_eval_command(app);
  stalldx::cli::Action sweep = stalldx::cli::add_sweep_command(app);

  for (CLI::App* sub : app.get_subcommands({})) sub->fallthrough();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  for (CLI::App* sub : app.get_subcommands()) {
    const std::string name = sub->get_name();
    if (name == "run") return run();
    if (name == "dataset") return dataset();
    if (name == "diagnose") return diagnose();
    if (name == "eval") return eval();
    if (name == "sweep") return sweep();

  }
  return 2;
}
