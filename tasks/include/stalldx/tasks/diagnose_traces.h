// The procedure behind `stalldx diagnose`: one trace diagnosed (with the what-if table from the same
// diagnosis), or several — the ranks of one job — reduced one at a time and diagnosed across ranks.
// Traces are stalldx's own or torch.profiler's; folders expand to the traces in them.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/diagnose/ranks.h"
#include "stalldx/status.h"

namespace stalldx::tasks {

struct DiagnoseOptions {
  std::vector<std::string> traces;  // files or folders
  diagnose::Thresholds thresholds;
  std::vector<int> what_if;         // worker counts to predict img/s at (one trace only)
  std::string trimmed_dir;          // also write each trace cut to keep_steps steady steps here; empty: no
  int keep_steps = 8;
  std::function<void(const std::string&)> notice;  // one line of progress at a time (reading, what was understood)
};

struct DiagnoseResult {
  std::string source;                // the first trace
  // One trace:
  diagnose::Report report;
  std::string what_if_table;         // empty unless asked
  // Several (the ranks of a job): the cross-rank report and each rank's own line.
  std::optional<diagnose::CrossRankReport> ranks;
  std::vector<std::string> rank_lines;
  bool ranks_standin = false;
};

// Expands folders and checks every trimmed copy's target before the first trace is read. Every failure
// is the input's (a trace unreadable, of another run, a target that would overwrite its input).
Status prepare_diagnose(DiagnoseOptions& options);
Status diagnose_traces(const DiagnoseOptions& options, DiagnoseResult& result);

}  // namespace stalldx::tasks
