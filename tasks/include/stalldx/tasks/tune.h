// `stalldx tune`: finds the fewest workers (and the shallowest prefetch) within `tolerance` of the best
// img/s without measuring the whole worker x prefetch grid. One profiled run gives the per-stage costs;
// the what-if model predicts the knee; unprofiled measurements (median of `repeat`) then climb from the
// predicted knee to its measured neighbours until neither side improves, and try the prefetch depths
// at the chosen worker count. Every run is reported with the reason it was made.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "stalldx/diagnose/whatif.h"
#include "stalldx/run_config.h"
#include "stalldx/status.h"
#include "stalldx/stop.h"

namespace stalldx::tasks {

struct TuneOptions {
  RunConfig base;                              // data "" = the built-in set; its workers/prefetch start the profile
  std::vector<int> workers{1, 2, 4, 6, 8, 12, 16}, prefetch{1, 2, 3, 4};
  int repeat = 3;
  double tolerance = 0.02;
};

struct TuneRun {
  int workers = 0, prefetch = 0;
  bool profiled = false;
  double images_per_second = 0;                // median of the unprofiled repeats (0 for the profiled run)
  int runs = 0;                                // pipeline runs this line cost
  std::string why;
};

struct TuneResult {
  std::vector<TuneRun> runs;
  std::vector<diagnose::Prediction> predicted;
  diagnose::StageCosts costs;
  int workers = 0, prefetch = 0;
  double images_per_second = 0, best_images_per_second = 0;
  int pipeline_runs = 0;
  bool interrupted = false;
};

Status run_tune(const TuneOptions& options, TuneResult& result, const StopFlag* stop = nullptr,
                const std::function<void(const TuneRun&)>& on_run = {});
std::string tune_text(const TuneResult& result);

}  // namespace stalldx::tasks
