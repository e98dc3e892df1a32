// Binds the run field table (stalldx/run_config.h) to CLI11 options — and so to TOML config keys:
// CLI11 reads --config files itself, keys = long option names. Nothing here names an option.
#pragma once

#include <CLI/CLI.hpp>

#include "stalldx/run_config.h"

namespace stalldx::cli {

enum class OptionSet { run, sweep };  // sweep: leaves out the axes (workers, prefetch) and run-only fields
void add_run_options(CLI::App& app, RunConfig& c, OptionSet set = OptionSet::run);

// A number in [lo, hi]; NaN and infinity refused (CLI::Range lets NaN through).
CLI::Validator finite_in(double lo, double hi);

}  // namespace stalldx::cli
