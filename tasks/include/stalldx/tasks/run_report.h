// Renders a RunResult: the configuration, throughput, step-time and wait statistics, bad samples and
// device figures — as text for a terminal or as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "stalldx/pipeline/runner.h"

namespace stalldx::tasks {

std::string run_report_text(const pipeline::RunResult& r);
nlohmann::json run_report_json(const pipeline::RunResult& r);
// One rank of an MPI job in a line: "rank 1 of 3: <config summary> | 1234 img/s over 20 steady steps | trace out.rank1.json".
std::string rank_line(const pipeline::RunResult& r);
// Every run option (the field table) as typed JSON: numbers, booleans, strings.
nlohmann::json run_config_json(const RunConfig& c);

}  // namespace stalldx::tasks
