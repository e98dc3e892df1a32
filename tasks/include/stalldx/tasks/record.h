// `stalldx record -- CMD` as a library call: runs CMD unmodified with the injection library named in
// NVTX_INJECTION64_PATH / CUDA_INJECTION64_PATH and a parts directory in STALLDX_RECORD_DIR, forwards a
// stop to it, waits, merges the parts (record/merge.h) into one trace and writes it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/diagnose/ranks.h"
#include "stalldx/name_pattern.h"
#include "stalldx/record/part_format.h"
#include "stalldx/record/merge.h"
#include "stalldx/record/role_map.h"
#include "stalldx/status.h"
#include "stalldx/stop.h"
#include "stalldx/tasks/child_process.h"
#include "stalldx/trace_model.h"

namespace stalldx::tasks {

struct RecordOptions {
  std::vector<std::string> command;       // CMD and its arguments (PATH is searched)
  std::string trace = "stalldx-record.json";
  std::string inject_library;             // libstalldx_inject.so
  record::RoleMap roles = record::RoleMap::defaults();
  NamePattern step;                       // --step: names it is found in are steps (empty: none)
  std::string roles_file;                 // --roles: the file `roles` came from (the injection reads it too under --sample)
  // --sample: device records (CUPTI) only in windows of steps, detached between (record/sampling.h);
  // the default records every step.
  record::SamplePlan sample;
  bool cupti_detach = true;               // with windows: finalize CUPTI between them (--no-cupti-detach: records off only)
  // --live: every live_s seconds while CMD runs, one line on `live` (and a JSON line appended to
  // live_json): the last interval's time share by class and steps/s. 0: none.
  double live_s = 0;
  std::string live_json;
  std::function<void(const std::string&)> live;
  bool keep_parts = false;                // leave the parts directory (its path is in the result)
  bool cuda = true;                       // false: NVTX ranges only, no CUPTI (CUDA_INJECTION64_PATH unset)
  record::OptionalCudaRecords optional;  // CUPTI driver API / synchronization records (both by default)
  // The Python hook (profiler/python): its folder goes first on CMD's PYTHONPATH, so any Python that CMD
  // runs marks its DataLoader's waits, loader work and loop iterations. Empty: no hook.
  std::string python_hook_dir;
  double kill_after_s = 5;                // a second interrupt: SIGTERM, then SIGKILL this much later
  std::function<void(const std::string&)> notice;  // progress and process-control lines (may be empty)
  // Launched as one rank of several (mpirun -np N stalldx record ...): the trace is `trace` with the
  // rank in its name, as `run` names it (rank_paths.h). False: `trace` as given.
  bool name_by_rank = true;
  diagnose::Thresholds thresholds;        // for the cross-rank report when CMD launches ranks
};

struct RecordResult {
  bool started = false;    // CMD ran (false: not found / not executable, see `start_error`)
  bool merged_only = false;  // `record --merge`: a folder left behind was merged; CMD's status is unknown
  std::string start_error;
  ChildResult child;
  std::string parts_dir;
  record::MergeReport merge;
  Trace trace;
  bool cuda_records_complete = true;  // false: --no-cuda / --no-cuda-driver / --no-cuda-sync left some out
  std::string trace_path;             // where the trace went (options.trace, with the rank when launched as one)
  // The recording's own failure (the trace not written, the parts folder gone, its disk full), apart
  // from CMD's status; empty = none. The parts folder is then kept for `record --merge`.
  std::string recording_error;
  std::vector<std::int64_t> outlived;  // recorded processes still running when CMD ended (daemons)
  std::string disk_full;               // the parts folder's file system had (almost) no space left: what it had
  int live_lines = 0;                  // live lines reported while CMD ran
  int live_json_lost = 0;              // of them, not written to --live-json (why: live_json_error)
  std::string live_json_error;
  // CMD launched ranks (`record -- mpirun -np N prog`, `record -- torchrun ...`): one trace per rank beside
  // trace_path (X.rankR.json), each rank's own verdicts (a line each) and the cross-rank report. Empty:
  // not a job of several ranks (or `record` itself was started as one of them).
  std::vector<std::string> rank_traces, rank_lines;
  std::optional<diagnose::CrossRankReport> ranks;
  bool ranks_standin = false;
  // CMD's exit status as a shell reports it: its code, 128 + signal when killed, 127 when not started.
  int exit_code() const;
};

// The injection library next to `exe` (build tree: ../profiler/inject/, installed: ../lib/), or
// $STALLDX_INJECT_LIBRARY; empty when none exists.
std::string find_inject_library(const std::string& exe);

// The Python hook's folder next to `exe` (build tree: ../profiler/python/, installed:
// ../share/stalldx/python/), or $STALLDX_PYTHON_HOOK_DIR; empty when none exists.
std::string find_python_hook(const std::string& exe);

// Runs, merges, writes `options.trace` (marked interrupted when CMD was killed or stopped). An error is
// returned only for what stops CMD from being started (no parts directory); CMD's status and the
// recording's own failures are in `result`. A stop after CMD ended interrupts the merge (kept, marked).
Status run_record(const RecordOptions& options, RecordResult& result, const StopFlag* stop = nullptr);

// `stalldx record --merge DIR`: merges a parts folder left behind (record killed, --keep-parts, a failed
// write) into `options.trace`, as run_record would have; `result.merged_only` (CMD's status unknown:
// exit_code() 0). The folder is removed after a complete merge and write, unless options.keep_parts.
Status merge_record(const std::string& parts_dir, const RecordOptions& options, RecordResult& result, const StopFlag* stop = nullptr);

// Where the trace goes: options.trace, with the rank in it when a launcher started this process as one
// of several (mpirun -np N stalldx record ...: each rank checks and claims its own file).
std::string record_trace_path(const RecordOptions& options);

// CMD's status for the shell, unless the recording itself failed while CMD succeeded (then 1).
int record_exit_code(const RecordResult& result);

// "recorded N processes: pid 123 (python train.py) 3 threads 1,234 ranges, CUDA records; ..." and the
// problems, one per line.
std::string record_summary_text(const RecordResult& result);

}  // namespace stalldx::tasks
