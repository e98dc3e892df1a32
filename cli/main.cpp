// stalldx: why does my input pipeline stall? Thin main: subcommands live in cli/*_command.cpp.
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <string>
#include <vector>

#include "commands.h"
#include "stalldx/text.h"
#include "config_check.h"
#include "stalldx/output_file.h"

namespace stalldx::cli {
StopFlag& stop_flag() {
  static StopFlag flag;
  return flag;
}
int fail(std::string_view command, const Status& st) {
  note("stalldx {}: {}\n", command, st.message());
  return st.code() == Status::Code::invalid_argument || st.code() == Status::Code::parse_error ? 2 : 1;
}
int fail_input(std::string_view command, const Status& st) {
  fail(command, st);
  return 2;
}
bool print_checked(std::string_view command, std::string_view text) {
  // Names in a report are untrusted bytes: no control character (an ESC sequence) reaches the terminal.
  if (Status st = write_stdout(terminal_safe(text)); !st.is_ok()) {
    note("stalldx {}: {}\n", command, st.message());
    return false;
  }
  return true;
}
}  // namespace stalldx::cli

namespace {
// SI_KERNEL: the terminal's line discipline sent it (Ctrl-C to the foreground group), not kill().
void on_signal(int sig, siginfo_t* info, void*) { stalldx::cli::stop_flag().raise(sig, info != nullptr && info->si_code == SI_KERNEL); }
void on_signal_exit(int sig, siginfo_t*, void*) { _exit(sig == SIGTERM ? 143 : 130); }
void install(void (*handler)(int, siginfo_t*, void*)) {
  // No SA_RESTART: a blocking call returns EINTR, so every wait sees the flag promptly.
  struct sigaction sa {};
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}
}  // namespace

namespace stalldx::cli {
void exit_on_signal(bool immediately) {
  install(immediately ? &on_signal_exit : &on_signal);
  if (immediately && stop_flag().stopped()) _exit(stop_flag().exit_code());
}
}  // namespace stalldx::cli

int main(int argc, char** argv) {
  // The command after the first standalone `--` (record's CMD) never reaches CLI11.
  std::vector<std::string> args(argv + 1, argv + argc);
  const auto dashes = std::find(args.begin(), args.end(), std::string("--"));
  const std::vector<std::string> command(dashes == args.end() ? args.end() : dashes + 1, args.end());
  const bool has_dashes = dashes != args.end();
  args.erase(dashes, args.end());
  CLI::App app{"stalldx: per-step diagnosis of GPU input-pipeline stalls (retrieval, decoding, submission, device-bound)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "stalldx 0.1.0");
  app.footer("Manual: README.md and docs/ (start with docs/pytorch.md for a PyTorch script, docs/record.md for any program)");
  // CLI11 reads config files at the top level only; subcommands fall through to it, and a file's
  // [run] / [sweep] table holds that subcommand's keys (= its long option names).
  app.allow_config_extras(CLI::config_extras_mode::error);  // an unknown key in a config is an error, not silence
  app.set_config("--config", "", "TOML file of options: a [run] or [sweep] table whose keys are long option names (see configs/)");
  const stalldx::cli::Action run = stalldx::cli::add_run_command(app);
  const stalldx::cli::Action dataset = stalldx::cli::add_dataset_command(app);
  const stalldx::cli::Action diagnose = stalldx::cli::add_diagnose_command(app);
  const stalldx::cli::Action eval = stalldx::cli::add_eval_command(app);
  const stalldx::cli::Action sweep = stalldx::cli::add_sweep_command(app);
  const stalldx::cli::Action tune = stalldx::cli::add_tune_command(app);
  const stalldx::cli::Action record = stalldx::cli::add_record_command(app, command);
  const stalldx::cli::Action capture = stalldx::cli::add_capture_command(app);

  for (CLI::App* sub : app.get_subcommands({})) sub->fallthrough();
  if (const std::string config = stalldx::cli::config_argument(argc, argv); !config.empty())
    if (stalldx::Status st = stalldx::cli::check_config_file(config, app); !st.is_ok()) {
      stalldx::cli::note("stalldx: {}\n", st.message());
      return 2;
    }
  try {
    std::reverse(args.begin(), args.end());  // CLI11 takes a vector last argument first
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  install(&on_signal);
  std::signal(SIGPIPE, SIG_IGN);  // a closed stdout is a write error we report, not a silent death
  for (CLI::App* sub : app.get_subcommands()) {
    const std::string name = sub->get_name();
    if (has_dashes && name != "record") {
      stalldx::cli::note("stalldx {}: takes no command after --\n", name);
      return 2;
    }
    if (name == "run") return run();
    if (name == "dataset") return dataset();
    if (name == "diagnose") return diagnose();
    if (name == "eval") return eval();
    if (name == "sweep") return sweep();
    if (name == "tune") return tune();
    if (name == "record") return record();
    if (name == "capture") return capture();
  }
  return 2;
}
