// `stalldx record -- CMD` as a library call: runs CMD unmodified with the injection library named in
// NVTX_INJECTION64_PATH / CUDA_INJECTION64_PATH and a parts directory in STALLDX_RECORD_DIR, forwards a
// stop to it, waits, merges the parts (record/merge.h) into one trace and writes it.
#pragma once

#include <optional>
#include <string>
#include <vector>

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
  bool keep_parts = false;                // leave the parts directory (its path is in the result)
  bool cuda = true;                       // false: NVTX ranges only, no CUPTI (CUDA_INJECTION64_PATH unset)
  record::OptionalCudaRecords optional;  // CUPTI driver API / synchronization records (both by default)
  // The Python hook (profiler/python): its folder goes first on CMD's PYTHONPATH, so any Python that CMD
  // runs marks its DataLoader's waits, loader work and loop iterations. Empty: no hook.
  std::string python_hook_dir;
};

struct RecordResult {
  bool started = false;    // CMD ran (false: not found / not executable, see `start_error`)
  std::string start_error;
  ChildResult child;
  std::string parts_dir;
  record::MergeReport merge;
  Trace trace;
  bool cuda_records_complete = true;  // false: --no-cuda / --no-cuda-driver / --no-cuda-sync left some out
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
// returned only for what stops the recording itself (no parts directory, trace not writable); CMD's
// failures are in `result`.
Status run_record(const RecordOptions& options, RecordResult& result, const StopFlag* stop = nullptr);

// "recorded N processes: pid 123 (python train.py) 3 threads 1,234 ranges, CUDA records; ..." and the
// problems, one per line.
std::string record_summary_text(const RecordResult& result);

}  // namespace stalldx::tasks
