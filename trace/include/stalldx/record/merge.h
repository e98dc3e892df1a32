// Merging a record directory (part_format.h) into one trace: one lane per recorded thread grouped by
// process, NVTX ranges with roles from a RoleMap, each process's CUPTI records, and steps taken from the
// step ranges of the thread that owns most of them (the consumer). Device work belongs to the step of
// the runtime call that launched it (correlation id), never to the step it overlaps.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stalldx/name_pattern.h"
#include "stalldx/record/role_map.h"
#include "stalldx/record/sampling.h"
#include "stalldx/record/step_inference.h"
#include "stalldx/status.h"
#include "stalldx/trace_model.h"

namespace stalldx::record {

struct RecordedProcess {
  std::int64_t pid = 0, ppid = 0;
  std::string command;
  std::size_t threads = 0, ranges = 0;
  bool used_cuda = false;      // the CUDA injection started in it
  bool cuda_records = false;   // and it wrote its CUPTI part (it exited normally)
  std::string python_hook;     // what the Python hook said it did there ("torch 2.11: DataLoader patched"); empty: not loaded
  bool loader_worker = false;  // the hook marked it a DataLoader worker as it started (kPythonWorkerStartName)
  std::size_t batches_made = 0;  // distinct batches its retrieval, decode and collate ranges name (a worker's work)
  int rank = -1, world_size = 0;  // a launcher started it as this rank of a world (-1: not a rank)
  std::string job;                // the launch it belongs to (rank_paths.h LauncherRank::job)
};

struct MergeReport {
  std::vector<RecordedProcess> processes;
  std::uint64_t ranges = 0, unclosed = 0, unbalanced_pops = 0, dropped = 0, unreadable_parts = 0;
  // A ring (record --sample) that wrapped: its oldest ranges overwritten, and the records of every other
  // thread and device window from before the newest such wrap point left out too (no step is judged on a
  // timeline whose producers' ranges are gone): `ring_horizon_ns`, 0 when no part wrapped.
  std::uint64_t overwritten = 0, before_horizon = 0;
  std::int64_t ring_horizon_ns = 0;
  std::uint64_t ring_capacity = 0;  // ranges a wrapped part holds
  std::uint64_t demoted_steps = 0;  // step-role ranges off the consumer thread or nested in another step
  std::vector<std::string> problems;  // one line each, naming the file
  std::size_t non_utf8_bytes = 0;      // bytes of names and command lines that were not UTF-8 (replaced by U+FFFD)
  StepEvidence steps;                  // which rule found the steps (step_inference.h)
  bool merge_stopped = false;          // should_stop() ended the merge early: the trace is marked interrupted
  // `record --sample`: the device windows kept in the trace, those whose records are gone (the window
  // files' cap, or closed before CUDA started), and the plan they ran under.
  std::size_t device_windows = 0, windows_without_records = 0;
  SamplePlan sample_plan;
};

struct MergeOptions {
  NamePattern step;        // --step (search semantics): names it is found in are steps (before the role map); empty = none
  std::int64_t end_ns = 0;         // when recording ended: the end given to ranges never closed
  // Asked before each part file; true stops the merge there, keeping (and marking) what was merged.
  std::function<bool()> should_stop;
  // A live snapshot (record --live): ranges that ended before since_ns are skipped, and with host_only
  // no CUPTI part is read (the windows are still marked).
  std::int64_t since_ns = 0;
  bool host_only = false;
  // >= 0: only the processes a launcher started as this rank (and their children), for a trace per rank.
  int rank = -1;
};

Status merge_parts(const std::string& dir, const RoleMap& roles, const MergeOptions& options, Trace& out, MergeReport& report);

// Is `name` (a file name) one of the parts format's (part_format.h), or a temporary file of its writers
// (a part's name + ".partial-XXXXXX", ".capture-XXXXXX")?
bool is_part_file_name(std::string_view name);
// The files of `dir` that a recorded process wrote (<pid>.…, such names).
std::size_t count_part_files(const std::string& dir);
// Removes the part files of `dir` (regular files of those names only, never through a link), then the
// folder itself if nothing else is in it. Returns the entries left (files not of the format's: they
// and the folder stay).
std::size_t remove_parts_folder(const std::string& dir);

// Steps from step ranges (the consumer = the thread with most of them; a step range nested in a kept
// one on the consumer becomes `compute`, the step's work; other step ranges become `user`); every consumer range gets the step that contains it, runtime calls the step
// that contains their start, device activity the step of its call; meta.unmatched_device counts device
// work launched inside the steps' span that no step claims. Returns the ranges demoted.
// Step ids are the numbers the step names carry (ProfilerStep#12), else ordinals: from 0, or — a trace
// that begins mid-run (a long run's rings, `from_marks` its live step marks) — from the run's number of
// the first kept step, read off the first mark that begins where a kept step does; that number is then
// in meta.config[kStepsBeforeTraceKey].
std::uint64_t assign_steps(Trace& t, const std::vector<StepMark>* from_marks = nullptr);
// The step ranges assign_steps keeps (indices into t.ranges, by begin time): on the thread with the most
// step ranges (`consumer`), those not beginning inside an earlier kept one. Empty: no step ranges.
std::vector<std::size_t> kept_step_ranges(const Trace& t, std::uint32_t& consumer);
// meta.config keys: present when the trace begins at a ring's horizon (the text says how much went),
// and the steps of the run before its first step (when the live step marks tell).
inline constexpr const char* kHostRingKey = "host_ring";
inline constexpr const char* kStepsBeforeTraceKey = "steps_before_trace";

}  // namespace stalldx::record
