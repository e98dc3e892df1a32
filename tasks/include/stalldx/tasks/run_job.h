// The procedure behind `stalldx run`: one rank of a job (or a run alone) from its options to its result.
// open() joins the MPI job when launched as one, makes the config this rank's, checks it, makes the
// default dataset (rank 0 makes it, the others wait), checks and claims the outputs; run() runs the
// pipeline with the step's collective; finish() writes the trace. The CLI prints.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "stalldx/output_claim.h"
#include "stalldx/output_file.h"
#include "stalldx/pipeline/runner.h"
#include "stalldx/ranks/world.h"
#include "stalldx/stop.h"
#include "stalldx/status.h"

namespace stalldx::tasks {

struct RunJobOptions {
  RunConfig config;
  std::string html;                                // the HTML report's path ("" = none): checked at open
  const StopFlag* stop = nullptr;                  // Ctrl-C: the run stops at its next step
  std::function<void(const std::string&)> notice;  // a line of progress (started, warm-up done)
};

class RunJob {
 public:
  explicit RunJob(RunJobOptions options) : o_(std::move(options)) {}
  ~RunJob();  // leaves the MPI job (abandoned: a rank stuck waiting for one that never came)
  RunJob(const RunJob&) = delete;
  RunJob& operator=(const RunJob&) = delete;

  // Everything before the run. `input_error` says whether a failure is the options' or the files' (exit
  // 2) rather than the run's.
  Status open(bool& input_error);
  // Runs the pipeline; `r` holds what was measured and recorded even when it fails or is interrupted.
  Status run(pipeline::RunResult& r);
  // Writes the trace (profiled, --trace given).
  Status write_trace(const pipeline::RunResult& r) const;

  const RunConfig& config() const { return o_.config; }
  bool trace_replaced() const { return trace_check_.replaced; }  // the trace path held a file before
  // " (rank R of N, pid P)" in a job; empty alone.
  std::string who() const;

 private:
  RunJobOptions o_;
  ranks::World world_;
  bool joined_ = false, abandoned_ = false;
  OutputCheck trace_check_{"trace"};
  OutputClaim trace_claim_;  // one writer per trace: a second run on this path is refused at its start
};

}  // namespace stalldx::tasks
