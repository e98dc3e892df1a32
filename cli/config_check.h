// Checks a --config TOML file against the options the app declares, before CLI11 reads it, so that a
// mistake is reported as FILE:LINE with the key and the valid keys nearest to it — and a table or key
// given twice is an error, not a silent override.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "stalldx/status.h"

namespace stalldx::cli {

// `app`: the top-level app with its subcommands registered. Only what this project's configs use is
// accepted: comments, [table] headers naming a subcommand, `key = value` lines with a long option name.
Status check_config_file(const std::string& path, CLI::App& app);

// The --config value in argv, or "" when there is none.
std::string config_argument(int argc, char** argv);

}  // namespace stalldx::cli
