// Across ranks (DESIGN.md "Verdicts", multi-rank): one trace per rank of an MPI job, each diagnosed on
// its own, then per step the cross-rank verdict — which rank arrived last at the collective (the
// straggler), how long the others waited for it, and the straggler's own verdict for that step.
//
// Ranks are read one at a time and reduced to a RankSteps (a few numbers and a line per step), so
// memory is bounded by the largest rank's trace, not by the job. Clocks: each rank's arrival times are
// moved onto rank 0's clock with its recorded clock_offset_ns.
#pragma once

#include <array>
#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/trace_model.h"

namespace stalldx::diagnose {

// What the cross-rank analysis keeps of one rank's diagnosed trace.
struct RankSteps {
  std::string file;
  int rank = -1, world_size = 0;
  std::string run_id, host;
  std::int64_t clock_uncertainty_ns = 0;
  std::int64_t base_time_ns = 0;  // the trace's times count from this wall-clock time (torch.profiler's baseTimeNanoseconds); 0: none
  bool interrupted = false;   // the rank's trace says its run ended early
  std::int64_t stuck_step = -1;  // it was stopped while waiting in this step's all-reduce (a rank never came); -1: no
  int stopped_by_rank = -1;      // another rank left and this one stopped with it (its last step); -1: no
  bool standin = false;
  // Where a rank's arrival at each step's collective comes from, best first:
  //   device_collective  the collective's device work began (kernels launched inside its host range, or
  //                      NCCL's kernels by name when no range marked the call: DDP's reducer, FSDP)
  //   host_collective    its host range began (MPI, gloo, a marked torch.distributed call)
  //   batch_ready        no collective left a record: the step's batch was ready (its input wait ended).
  //                      In synchronous data parallel the others wait for the last batch in their all-reduce.
  enum class Arrival : std::uint8_t { none, device_collective, host_collective, batch_ready };
  Arrival arrival = Arrival::none;
  struct Step {
    std::int64_t step = -1;
    bool warmup = false;
    std::int64_t arrive_ns = -1;  // its collective began, on the device or else the host (rank 0's clock); -1: never reached
    std::int64_t own_ns = -1;     // from leaving the previous step's collective to arriving at this one (its own step); -1: unknown
    std::int64_t leave_ns = -1;   // its collective ended (same clock as arrive_ns); -1: none
    double window_ms = 0;
    Verdict verdict = Verdict::device_bound;
    std::string evidence;
  };
  std::vector<Step> steps;    // by step id, ascending
};

// Reduces one rank's trace (its diagnosis computed here). Fails when the trace has no rank facts
// (rank, world_size, run_id: written by `stalldx run` under an MPI launcher).
Status rank_steps(const Trace& trace, const std::string& file, const Thresholds& th, RankSteps& out);

// "rank 2 (host, out.rank2.json): 20 steady steps | retrieval 20\n" — its own verdicts, counted.
std::string rank_steps_line(const RankSteps& r);

struct CrossRankThresholds {
  double straggler_ms = 1.0;          // the earliest rank waited at least max(this, fraction × step window)
  double straggler_fraction = 0.1;    //   for the last one to be called the straggler (jitter on a busy host stays under it)
  double consistent_share = 0.5;      // straggler on at least this share of steady steps: the run's straggler,
  double costly_share = 0.2;          //   or the others' waits for it are at least this share of the steady time
                                      //   (a rank whose batches come in bursts stalls the job on a few long steps)
};

struct CrossStep {
  std::int64_t step = -1;
  int straggler = -1;                 // -1: balanced (nobody waited long) or no collective
  bool never_arrived = false;         // the straggler's trace ends before this step, or it has none and the others
                                      //   were stopped waiting for it here (it died or stopped)
  double waited_ms = 0;               // the longest wait of the others (the earliest arrival's)
  std::vector<int> waiting;           // ranks that waited, earliest first
  Verdict straggler_verdict = Verdict::device_bound;
  std::string straggler_evidence;
};

struct RankRow {                      // the run summary by rank
  int rank = -1;
  int steady_steps = 0, straggler_steps = 0;
  double waited_ms = 0;               // steady steps: time the others waited for it, summed over steps (the longest wait each)
  std::array<int, kVerdictCount> verdicts_as_straggler{};  // by Verdict
  bool interrupted = false;
};

struct CrossRankReport {
  bool clocks_disagree = false;  // arrivals far apart beyond what the steps allow: clocks not aligned (notes say so)
  int world_size = 0;
  std::string run_id;
  std::vector<int> missing;           // ranks of the world with no trace given
  std::vector<std::string> notes;     // interrupted ranks, clock uncertainty, ...
  std::vector<CrossStep> steps;       // steady steps only, ascending
  std::vector<RankRow> ranks;         // ranks present
  int run_straggler = -1;             // the rank the others waited for most, when it straggled on ≥ consistent_share
                                      //   of steady steps or cost them ≥ costly_share of the steady time; else -1
  int balanced_steps = 0;
  double steady_ms = 0;               // the steady steps' windows (each step's mean over ranks), summed
};

// Folds ranks in one at a time, in any order, keeping per step only the earliest and the latest
// arrival (and, for worlds of up to kListedWaiters ranks, who waited): memory grows with the steps and
// the ranks, not with steps × ranks, and each rank's RankSteps can be dropped once added.
class CrossRankAccumulator {
 public:
  static constexpr int kListedWaiters = 32;
  explicit CrossRankAccumulator(CrossRankThresholds th = {}) : th_(th) {}
  // Fails (naming both files) when the rank comes from another run than the first, or repeats a rank.
  Status add(const RankSteps& rank);
  CrossRankReport finish() const;

 private:
  struct StepState {
    std::int64_t step = -1;
    bool warmup = false;
    std::int64_t first_ns = INT64_MAX, last_ns = -1;
    int first_rank = -1, last_rank = -1, arrivals = 0;
    Verdict last_verdict = Verdict::device_bound;
    std::string last_evidence;
    std::int64_t last_own_ns = -1, min_own_ns = INT64_MAX;  // the last arrival's own step; the shortest own step
    double window_sum_ms = 0;
    int windows = 0;
    int stuck = 0;                    // ranks stopped while waiting in this step's all-reduce
    std::vector<std::pair<std::int64_t, int>> arrived;  // (arrival, rank), only while the world is small
  };
  struct RankState {
    int rank = -1;
    bool interrupted = false;
    std::int64_t last_step = -1;
    int stopped_by = -1;
  };
  void arrival_notes(std::vector<std::string>& notes) const;
  const RankState* membership(const std::vector<RankState>& ranks, CrossRankReport& out) const;
  void check_clocks(CrossRankReport& out) const;
  void name_stragglers(const std::vector<RankState>& ranks, const RankState* dead, CrossRankReport& out) const;
  CrossRankThresholds th_;
  std::string first_file_, run_id_;
  int world_size_ = 0;
  std::int64_t worst_uncertainty_ns_ = 0;
  std::array<int, 4> arrival_bases_{};  // ranks by RankSteps::Arrival
  std::vector<RankState> ranks_;
  std::vector<StepState> steps_;  // by step id (dense from 0)
  std::shared_ptr<class RankClocks> clocks_;  // ranks' clocks put on the first one's (rank_clocks.h)
};

// All at once (the accumulator over `ranks`).
Status cross_rank(const std::vector<RankSteps>& ranks, const CrossRankThresholds& th, CrossRankReport& out);

std::string cross_rank_text(const CrossRankReport& r, bool standin, int max_step_lines = 40);
// The job's answer in one sentence (no arrow, no newline; text, HTML and every other form say it so):
// "rank 2 is the straggler: the others waited … for it, …" or "no consistent straggler: …".
std::string run_straggler_sentence(const CrossRankReport& r, bool standin);
std::string cross_rank_json(const CrossRankReport& r, bool standin);
// SVG: per steady step the others' longest wait in the all-reduce (ms), coloured by the straggler's own
// verdict and labelled with its rank; steps that do not fit are grouped (mean wait, the most frequent
// straggler). Fixed width; every text escaped.
std::string cross_rank_svg(const CrossRankReport& r, bool standin);
// One self-contained HTML page: the run's answer and notes, the chart above, the table by rank (missing
// ranks as rows without a trace), each rank's own verdicts (`rank_lines`: rank_steps_line's), and every
// step with a straggler and its evidence. Every string from a trace escaped.
std::string cross_rank_html(const CrossRankReport& r, const std::vector<std::string>& rank_lines, bool standin);

}  // namespace stalldx::diagnose
