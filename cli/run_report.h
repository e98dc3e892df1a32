// Renders a RunResult: the configuration, throughput, step-time and wait statistics, bad samples and
// device figures — as text for a terminal or as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "runner.h"

namespace stalldx::cli {

std::string run_report_text(const pipeline::RunResult& r);
nlohmann::json run_report_json(const pipeline::RunResult& r);

}  // namespace stalldx::cli
