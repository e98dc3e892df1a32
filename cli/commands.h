// The subcommands of the stalldx executable. Each registers its options on `app` and returns the
// function that runs it (exit code). Exit codes: 0 ok, 1 run failed, 2 bad input/usage, 130 after
// SIGINT, 143 after SIGTERM (StopFlag::exit_code).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/tasks/report_output.h"
#include "stalldx/output_file.h"
#include "stalldx/text.h"
#include "stalldx/status.h"
#include "stalldx/stop.h"

namespace stalldx::cli {

using Action = std::function<int()>;

Action add_run_command(CLI::App& app);
Action add_dataset_command(CLI::App& app);
Action add_diagnose_command(CLI::App& app);
Action add_sweep_command(CLI::App& app);
Action add_eval_command(CLI::App& app);
Action add_tune_command(CLI::App& app);
// `command`: what followed the first standalone `--` on the command line (main splits it off before
// CLI11 parses: an option of optional value, `--sample`, would otherwise take the `--` as its own end
// and the command's options as stalldx's). Filled before the action runs; read by it.
Action add_record_command(CLI::App& app, const std::vector<std::string>& command);
Action add_capture_command(CLI::App& app);

// The diagnosis thresholds as options (diagnose, record).
void add_threshold_options(CLI::App& sub, diagnose::Thresholds& th);
// --json, --svg, --html, --no-summaries: the forms of a diagnosis (diagnose, record).
void add_report_options(CLI::App& sub, tasks::ReportForms& forms);

// Raised by SIGINT/SIGTERM (installed by main); every long command polls it and stops cleanly.
StopFlag& stop_flag();
// For a phase that has nothing to clean up and cannot poll (reading a trace in one library call):
// `true` makes SIGINT/SIGTERM end the process at once with 130/143; `false` goes back to the flag.
void exit_on_signal(bool immediately);

// Prints "stalldx <command>: <message>" on stderr and returns the exit code for `st` (2 for bad input,
// 1 otherwise).
int fail(std::string_view command, const Status& st);
// The same for a problem with what the user gave (a path, a file): always exit code 2.
int fail_input(std::string_view command, const Status& st);
// Writes `text` to stdout; on failure (a full disk, a closed pipe) says so on stderr and returns false.
bool print_checked(std::string_view command, std::string_view text);
// A message on stderr (progress, notes, errors) that never throws: a closed stderr drops it.
template <typename... T>
void note(fmt::format_string<T...> f, T&&... args) {
  write_stderr(terminal_safe(fmt::format(f, std::forward<T>(args)...)));  // names inside are untrusted bytes
}

}  // namespace stalldx::cli
