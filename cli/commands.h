// The subcommands of the stalldx executable. Each registers its options on `app` and returns the
// function that runs it (exit code). Exit codes: 0 ok, 1 run failed, 2 bad input/usage, 130/143 signal.
#pragma once

#include <CLI/CLI.hpp>

#include <atomic>
#include <functional>

namespace stalldx::cli {

using Action = std::function<int()>;

Action add_run_command(CLI::App& app);
Action add_dataset_command(CLI::App& app);
Action add_diagnose_command(CLI::App& app);
Action add_sweep_command(CLI::App& app);
Action add_eval_command(CLI::App& app);

// Set by SIGINT/SIGTERM; long commands poll it and stop cleanly.
std::atomic<bool>& stop_requested();
int stop_signal();  // the signal that set it (0 = none)

}  // namespace stalldx::cli
