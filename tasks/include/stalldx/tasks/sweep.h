// `stalldx sweep` as a library call: worker x prefetch settings. Per point, throughput from `repeat`
// unprofiled runs (median; warm-up excluded by the runner), then one profiled run whose steady-state
// verdicts are kept — throughput is never taken from the profiled run. Each point is appended to
// OUT/sweep.csv (fsync'ed) as it finishes, so an interrupted sweep keeps what it measured and `resume`
// skips it; OUT/sweep.config holds the comparable signature that `resume` must match.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "stalldx/diagnose/sweep_analysis.h"
#include "stalldx/run_config.h"
#include "stalldx/status.h"
#include "stalldx/stop.h"

namespace stalldx::tasks {

struct SweepOptions {
  RunConfig base;                          // every option but the axes; data "" = the built-in set
  std::vector<int> workers{1, 2, 4, 8, 16}, prefetch{1, 2, 4};
  int repeat = 3;
  std::string out = "sweep-out";
  bool resume = false;
};

struct SweepProgress {
  std::size_t done = 0, total = 0;
  double elapsed_s = 0;
  std::string last;                        // "4w/2p 3100 img/s decoding"
};

struct SweepResult {
  std::vector<diagnose::SweepPoint> points;  // sorted by (workers, prefetch)
  diagnose::Recommendation recommendation;   // points into `points`
  std::size_t resumed = 0, malformed_rows = 0;
  bool interrupted = false;
  std::vector<std::string> files;            // what was written
  // The what-if model from the profiled run with the most workers run in this invocation (none when
  // every point was resumed): its predictions for the swept worker counts.
  std::vector<diagnose::Prediction> predicted;
  int profiled_workers = 0;
};

// The signature two sweeps must share to be merged by --resume: every comparable run option + repeat.
std::string sweep_signature(const RunConfig& base, int repeat);

// Errors: invalid_argument (bad lists, options, resume mismatch), io_error (a result that could not be
// written — never reported as success), or what stopped a run. An interrupt is not an error: `result`
// says interrupted and holds the points measured so far (already on disk).
Status run_sweep(const SweepOptions& options, SweepResult& result, const StopFlag* stop = nullptr,
                 const std::function<void(const SweepProgress&)>& progress = {});

}  // namespace stalldx::tasks
