// One report writer for run, diagnose and record: a diagnosis (or a job's cross-rank report) in every
// form the command was asked for — text or JSON for stdout, SVG and HTML files. The caller prints the
// stdout part (its own exit status on a closed pipe), then writes the files; each file is written whole
// or not at all (write_file_atomic).
#pragma once

#include <string>
#include <vector>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/diagnose/ranks.h"
#include "stalldx/pipeline/runner.h"
#include "stalldx/status.h"

namespace stalldx::tasks {

struct ReportForms {
  bool json = false;       // stdout: JSON instead of text
  bool summaries = true;   // text: the summary tables after the verdicts
  std::string svg, html;   // files to write; empty: not asked
  std::string source;      // what the report is of (a trace's path, "stalldx run"): named in the HTML page
};

// One diagnosis.
std::string report_stdout(const diagnose::Report& rep, const ReportForms& forms);
Status write_report_files(const diagnose::Report& rep, const ReportForms& forms);

// A run of the reference pipeline: its own report, then the diagnosis of its trace when it has one
// (in JSON, the diagnosis joins the run's object as "diagnosis").
std::string run_stdout(const pipeline::RunResult& run, const diagnose::Report* rep, const ReportForms& forms);

// A job's ranks: each rank's own line (`rank_lines`, rank_steps_line's), then the cross-rank report.
struct RanksReport {
  const diagnose::CrossRankReport& report;
  const std::vector<std::string>& rank_lines;
  bool standin = false;
};
std::string ranks_stdout(const RanksReport& ranks, const ReportForms& forms);
Status write_ranks_files(const RanksReport& ranks, const ReportForms& forms);

}  // namespace stalldx::tasks
