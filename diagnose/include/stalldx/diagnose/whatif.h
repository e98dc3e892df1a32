// What-if: from one profiled run, the steady-state img/s to expect at other worker counts (the idea
// behind Plumber's and DS-Analyzer's models, per pipeline stage). Measured per sample: the read's CPU
// time and its off-CPU wait (storage), the decode's CPU time; per step: the device's busy time and the
// consumer's own host time; the cores the process may use, and — when the run was input-bound with
// starved workers — the CPU the workers actually got. A worker serves one sample at a time (wait + CPU),
// the workers together get at most the available cores, a bandwidth cap (when recorded) bounds the
// reads, and the step can go no faster than the device or the consumer.
//
// Honest limits, stated in `limits`: storage that was never saturated may have a bandwidth limit the
// run could not see; more workers than cores is modelled as sharing the cores, not as the extra cost of
// switching between them.
#pragma once

#include <string>
#include <vector>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/trace_model.h"

namespace stalldx::diagnose {

struct StageCosts {
  int batch = 0, workers = 0, cores = 0;
  int samples = 0;                    // steady-state samples measured
  double read_cpu_ms = 0, read_wait_ms = 0, decode_cpu_ms = 0;  // per sample
  double bytes_per_sample = 0;
  double bandwidth_mbps = 0;          // a recorded read bandwidth cap; 0 = none known
  double device_ms_per_step = 0;      // the busiest stream's work per steady step
  double consumer_ms_per_step = 0;    // the consumer's own host time per step (not waiting for input or device)
  double consumer_cpu_ms_per_step = 0;  // of which it ran on a CPU (takes a core's share from the workers)
  double worker_cpu_available = 0;    // cores the workers got when they were saturated; 0 = not measured
  bool valid = false;
  std::vector<std::string> limits;    // what the model cannot know from this run
};

struct Prediction {
  int workers = 0;
  double images_per_second = 0;
  std::string bound;                  // "workers (latency)", "CPU", "bandwidth", "device", "consumer"
};

StageCosts measure_stage_costs(const Trace& trace, const Thresholds& thresholds = {});
// The same from a diagnosis already made of `trace` with `thresholds` (the user's warm-up included): no
// second diagnosis pass.
StageCosts measure_stage_costs(const Trace& trace, const Report& diagnosis, const Thresholds& thresholds);
// Prefetch depth is not a term: it absorbs the variation of the producer's pace, it does not change the
// mean rate (measured on the H200: the seed workload's img/s at prefetch 1, 2 and 4 within run-to-run
// noise). A finite-buffer (M/M/1/K) coupling term was tried and dropped: it overstated the loss of the
// steady batch arrivals of real pipelines by up to 20 %.
Prediction predict(const StageCosts& costs, int workers);
std::vector<Prediction> predict_curve(const StageCosts& costs, const std::vector<int>& workers);
// Fewest workers whose prediction is within `tolerance` of the best on the curve.
const Prediction* predicted_knee(const std::vector<Prediction>& curve, double tolerance = 0.02);
std::string whatif_table(const StageCosts& costs, const std::vector<Prediction>& curve);

}  // namespace stalldx::diagnose
