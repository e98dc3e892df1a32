// Binds every RunConfig field to a CLI11 option (and so to a TOML config key: CLI11 reads --config
// files itself, keys = long option names). One source of truth for run and sweep.
#pragma once

#include <CLI/CLI.hpp>

#include "run_config.h"

namespace stalldx::cli {

// `pipeline_only` leaves out the options a sweep lists itself (workers, prefetch) and the trace.
void add_run_options(CLI::App& app, pipeline::RunConfig& c, bool pipeline_only = false);

}  // namespace stalldx::cli
