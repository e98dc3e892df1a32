// The step loop: builds the pool, the producer and the device stage for a RunConfig, runs warm-up +
// steps on the calling thread (the consumer), and returns what was measured — plus the trace when
// profiling was on.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stalldx/pipeline/bad_samples.h"
#include "stalldx/stage/device_stage.h"
#include "stalldx/run_config.h"
#include "stalldx/status.h"
#include "stalldx/trace_model.h"

namespace stalldx::pipeline {

struct RunResult {
  RunConfig config;                  // as run (device resolved, data resolved)
  std::string device_notice;         // e.g. "no CUDA device (...): running CPU-only with the host stand-in"
  DeviceStats device;
  int slots = 0;
  std::int64_t steps_completed = 0;  // warm-up included
  bool interrupted = false;
  std::int64_t stuck_in_collective_step = -1;  // stopped while waiting in this step's all-reduce (a rank never came); -1: no
  int stopped_by_rank = -1;          // another rank left (Ctrl-C, a failure) and this one stopped with it at the same step
  bool failed_bad_sample = false;
  std::uint64_t images = 0;          // steady-state images consumed
  double seconds = 0;                // steady-state wall time
  double images_per_second = 0;
  std::vector<double> step_ms;       // steady-state, per step (consumer loop period)
  std::vector<double> wait_ms;       // steady-state, consumer's wait for its batch per step
  std::vector<double> warmup_step_ms;
  double step_p50 = 0, step_p95 = 0, step_max = 0;
  double wait_mean = 0, wait_p50 = 0, wait_p95 = 0, wait_max = 0;
  std::vector<std::uint64_t> batch_checksums;  // host checksum per step (--verify)
  BadSampleReport bad;               // over every sample the producer loaded (prefetched ones too)
  std::uint64_t bad_images_consumed = 0;  // images of the consumed batches not from their own file
  std::uint64_t dataset_size = 0;
  std::uint64_t cache_misses = 0;    // --cold-cache: reads (warm-up and prefetch included) that missed the page cache
  std::vector<std::string> index_warnings;
  Trace trace;                       // filled when config.profile
  bool has_trace = false;
};

// Checks everything that can be checked before work starts (sizes, counts, dataset) — exit code 2 material.
Status validate(const RunConfig& config);

// Where a run is, for a progress line: called on the consumer thread when the first step begins (the
// result's `device` already holds the start-up figures and notes) and when steady state begins (after
// the warm-up has drained). Must be quick.
enum class RunPhase { started, steady };
using PhaseCallback = std::function<void(RunPhase)>;

// What a rank does with the other ranks after each step (an MPI job; ranks/ implements it): the
// all-reduce of the step's gradients. Called on the consumer thread, once per step on every rank,
// inside a `collective` range. `leaving`: this rank stops after this step (Ctrl-C, a failure); the ranks
// first agree whether any is leaving — then none starts the all-reduce and `any_leaving()` is true on all,
// so every rank stops at the same step and none waits for one that left. A rank that never comes (it was
// killed) cannot agree: the wait then ends when the run's stop flag is raised (the launcher stops the
// job), with `stopped_waiting` set.
struct StepEnd {
  int leaver = -1;  // the lowest rank that was leaving, by agreement; -1: none, or not known (stopped waiting)
  bool stopped_waiting = false;
  bool any_leaving() const { return leaver >= 0 || stopped_waiting; }  // every rank stops after this step
};
class StepCollective {
 public:
  virtual ~StepCollective() = default;
  // Called once on every rank before the first step, with the run's device stage — or with null when
  // this rank's set-up failed, so that the others learn it instead of waiting for it. Sets up the
  // collective's side of the device (NCCL on the stage's stream); an error ends the run on this rank,
  // and every rank gets one when any rank's set-up failed.
  virtual Status start(DeviceStage* stage) = 0;
  virtual Status after_step(std::int64_t step, bool leaving, StepEnd& end) = 0;
  virtual std::string describe() const = 0;  // "MPI_Allreduce 51.2 MB", the stand-in's device record's name
  virtual std::uint64_t bytes() const = 0;
};

// Runs. `stop` (may be null) is watched by every wait of the run (the consumer's, the storage knobs',
// the stand-in's); when it becomes true the run ends within ~20 ms plus one device step and the result
// says interrupted. Errors only for what prevents a run (no dataset, no memory, CUDA failure).
// With `collective` (may be null), each step ends with collective->after_step; with the host stand-in
// its time is also recorded as the stand-in device's work (it plays the GPU's all-reduce).
Status run_pipeline(const RunConfig& config, RunResult& result, const std::atomic<bool>* stop = nullptr,
                    const PhaseCallback& on_phase = {}, StepCollective* collective = nullptr);

}  // namespace stalldx::pipeline
