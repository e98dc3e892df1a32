// The diagnosis engine (DESIGN.md "Verdicts"): from a Trace, one verdict per step — retrieval,
// decoding, submission or device-bound (consumer-bound with the host stand-in) — with its evidence,
// plus run-level summaries and recommendations. Depends on the trace model only.
//
// Busy time is the union of device work over all streams, except copies from pageable host memory:
// those are paced by the host staging them through a driver buffer, so their time counts as idle and
// is attributed to the host call that staged it (submission: pageable copy).
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <cstdint>
#include <string>
#include <vector>

#include "stalldx/run_config.h"
#include "stalldx/trace_model.h"

namespace stalldx::diagnose {

struct Thresholds {
  double launch_bound_launches = 100;  // a step with at least this many launches can be launch-rate bound
  double device_bound_ms = 1.0;       // a stall at or under max(this, fraction × window) is device-bound
  double device_bound_fraction = 0.05;
  // The most stall a step of `window_ms` may have and still be device-bound (ms).
  double device_bound_limit(double window_ms) const {
    return device_bound_ms > device_bound_fraction * window_ms ? device_bound_ms : device_bound_fraction * window_ms;
  }
  double dominant_share = 0.6;        // a class covering at least this share of the stall names the verdict
  int warmup_steps = -1;              // -1 = from the trace's config (warmup), else 0
  int short_capture_steps = 10;       // fewer steady-state steps than this: "too short for steady state"
  double waiting_cpu_ratio = 0.3;     // cpu/wall under this on reads: waiting on storage
  double contention_cpu_ratio = 0.7;  // cpu/wall under this on decodes: the thread was not running
  double starved_runq_ratio = 0.2;    // producers queued for a CPU this share of their wall time: the host is oversubscribed
};

// The names of classes, verdicts and causes are defined once, in vocabulary.cpp.
enum class StallClass : std::uint8_t { retrieval, decoding, submission, unattributed };
inline constexpr int kClassCount = 4;
const char* class_name(StallClass c);

// input: the consumer waited for a loader whose work left no records (DataLoader workers absent from a
// torch.profiler trace): input-bound, split between retrieval and decoding unknown.
enum class Verdict : std::uint8_t { retrieval, decoding, submission, device_bound, mixed, unattributed, no_device_records, input };
inline constexpr int kVerdictCount = 8;
// "device-bound" reads "consumer-bound" when the host stand-in played the device.
std::string verdict_name(Verdict v, bool standin);
// The verdict a name reads as (either spelling of device-bound), from a file or an option; false if none.
bool verdict_from_name(std::string_view name, Verdict& out);

// Why idle time happened, as a type: reports print cause_name(); recommendations switch on the value.
enum class Cause : std::uint8_t {
  storage_wait,       // retrieval: reads ran mostly off-CPU (waiting on storage)
  storage_read,       // retrieval: reads on CPU, or CPU time not sampled
  decode_cpu_bound,   // decoding: decode threads were running (cpu/wall high)
  decode_starved,     // decoding: decode threads ran well under their wall time (CPU contention)
  read_starved,       // decoding (the CPU): read threads were runnable but not running (run-queue delay)
  input_unsplit,      // waiting for a batch whose producers left no records (workers not annotated)
  pageable_copy,      // submission: copy from pageable memory, staged by the host
  per_sample_copies,  // submission: many small copies per step
  host_allocation,    // submission: pinning / allocation inside the step
  synchronization,    // submission: the host blocked on the device inside the step
  launch_rate,        // submission: the host launched kernels more slowly than the device ran them
  other_cuda_call,    // submission: another CUDA runtime call
  submit_work,        // submission: host work inside a submit range, outside CUDA calls
  consumer_starved,   // submission: the consumer (the submitting thread) was runnable but not running
  unmapped_range,     // unattributed: inside a range with no stall role
  outside_ranges,     // unattributed: the consumer was outside any range
  host_paced,         // submission: the device idled until the consumer launched its next work (HTA's rule), few launches
  // the loop made no CUDA call until it copied its next batch, and nothing recorded what it did: steps
  // inferred from the batch copies of a program without ranges — its input, unsplit (like input_unsplit)
  before_batch_copy,
};
inline constexpr int kCauseCount = 18;
const char* cause_name(Cause c);
StallClass cause_class(Cause c);
// A wait for input that no record splits into retrieval and decoding (input_unsplit, before_batch_copy):
// a step that waits mostly so is input-bound (Verdict::input).
bool unsplit_input(Cause c);

// One cause's share of a step's stall; `what` names the record kind behind it (an API or range name).
struct CauseShare {
  Cause cause = Cause::outside_ranges;
  double ms = 0;
  std::string what;
};

// The host's launches in one step (for the launch-rate cause).
struct LaunchStats {
  int launches = 0;                 // kernel launch calls on the consumer in this step
  double host_us_per_launch = 0;    // mean wall time of those calls
  double host_us_between_launches = 0;  // first launch's begin to last launch's end / launches: the host's pace
                                        // (framework work between calls included)
  double device_us_per_kernel = 0;  // mean duration of the step's kernels
};

// What a step's verdict rests on. A sampled recording (`record --sample`) has device records only inside
// its windows: the other steps are judged from host records (their waits), and a step that did not wait
// takes device-bound or launch-bound from the nearest window's step (carried, at lowered confidence).
enum class StepBasis : std::uint8_t { device, host_records, carried };
const char* step_basis_name(StepBasis b);  // "device records", "host records", "carried" (vocabulary.cpp)

struct StepDiagnosis {
  std::int64_t step = -1;
  StepBasis basis = StepBasis::device;
  std::int64_t carried_from = -1;                  // the window step whose verdict this one carries
  bool at_window_edge = false;                     // inside a device window but at one of its blind ends (not judged on the device)
  bool warmup = false;
  double window_begin_ms = 0, window_end_ms = 0;   // relative to the trace origin
  double window_ms = 0, busy_ms = 0, stall_ms = 0;
  double work_ms = 0;  // the device's time on this step's own work (the union of its activities); 0: none recorded
  std::array<double, kClassCount> class_ms{};      // stall split by class (sums to stall_ms)
  Verdict verdict = Verdict::device_bound;
  StallClass top = StallClass::unattributed, second = StallClass::unattributed;  // for mixed
  std::string evidence;                            // one line
  std::vector<CauseShare> causes;                  // typed, largest first; sums to stall_ms
  LaunchStats launch;
  std::vector<std::string> details;                // causes, record ids (text for people)
  std::string next_question;
  std::uint64_t device_records = 0;
  int copies = 0;                                  // memcpy records of this step
};

struct SummaryRow {
  std::string group, name;  // group: role, "cuda_api", "kernel", "memcpy_h2d", ...
  std::uint64_t count = 0;
  double total_ms = 0, mean_ms = 0, p95_ms = 0, max_ms = 0;
  std::uint64_t bytes = 0;
};

struct BandwidthRow {
  std::string kind;       // "memcpy_h2d pinned"
  std::uint64_t copies = 0, bytes = 0;
  double total_ms = 0, gbps = 0;
};

// How far a report's verdicts can be trusted: lowered by dropped or doubted records, missing device
// records, steps inferred rather than marked (Coverage::lowered_because says which).
enum class Confidence : std::uint8_t { high, lowered };

struct Coverage {
  bool host = false, cpu_time = false, nvtx = false, cupti = false;
  bool device_records = false;     // any device work recorded
  bool standin = false;            // the host stand-in played the device
  std::uint64_t dropped_host = 0, dropped_counters = 0, dropped_device = 0;
  std::uint64_t unmatched_device = 0;   // device work with no step
  std::uint64_t unmatched_calls = 0;    // runtime calls with no step, among those with device work
  // What in the trace was not trusted (diagnose/trace_doubts.h): removed, or flagged.
  std::uint64_t absurd_events = 0, repeated_events = 0, duplicate_correlations = 0, unlinked_device = 0, zero_length_kernels = 0;
  bool device_links_doubtful = false;   // much device work links to no call: "the input keeps up" is not said
  bool interrupted = false;
  // The trace begins mid-run (record --sample, a long run's rings kept the newest ranges): the run's
  // warm-up and start-up are before it. first_step: the run's number of its first step, -1 unknown.
  bool begins_mid_run = false;
  std::int64_t first_step = -1;
  // A sampled recording: its plan (SamplePlan::words), windows, and steps inside them / carried.
  bool sampled = false;
  std::string sample_plan;
  std::size_t device_windows = 0, steps_in_windows = 0, steps_carried = 0;
  Confidence confidence = Confidence::high;
  std::vector<std::string> lowered_because;  // why confidence is lowered, one reason each
  std::vector<std::string> notes;
};

// What a recommendation proposes, as a type (tests check each rule is not given when the config has it).
enum class Advice : std::uint8_t {
  record_longer, collect_device_records, input_keeps_up, storage_latency, bandwidth_cap, more_workers, oversubscribed,
  enable_dct_scaling, enable_roi_decode, uint8_output, pinned_memory, batch_copies, pin_once, drop_step_sync, launch_rate,
  add_ranges, split_wait, low_confidence, consumer_starved, bursty_input, input_spikes, startup_in_steady_state, host_paced, name_steps,
  iterator_per_step, worker_restarts, evaluation_in_steps,
};
inline constexpr int kAdviceCount = static_cast<int>(Advice::evaluation_in_steps) + 1;  // keep on the last kind
// Its stable name in the JSON report ("bursty_input", "storage_latency", ...): for scripts that act on advice.
const char* advice_name(Advice a);
// "high", or "lowered: <reason>; <reason>": how every report prints a coverage's confidence.
std::string confidence_text(const Coverage& c);
struct Advised {
  Advice kind;
  std::string text;
};

// What bounds the run, by share of steady time (not by counting steps): the first line of every report.
enum class Bound : std::uint8_t {
  unknown,       // no steady steps: nothing to say
  input,         // the loop waited on its input (retrieval + decoding) more than on anything else
  submission,    // the device idled on the host's CUDA calls
  device,        // the device was busy (consumer-bound with the host stand-in)
  unattributed,  // the device idled while the loop was outside any range that says why
  loop,          // no device records: the loop's own work took most of its time, not its waits
};
const char* bound_name(Bound b, bool standin);  // "input-bound", "device-bound", ... (vocabulary.cpp)
struct Headline {
  Bound bound = Bound::unknown;
  // Shares of the steady window (after start-up when start-up was found); busy is -1 without device records.
  // input = retrieval + decoding + unsplit (waits for a batch whose producers left no records: input, its
  // kind unknown). Without device records, submission is the loop's CUDA calls alone: the loop runnable but
  // waiting for a CPU (starved) is part of its own work, slowed by a busy host, not a launch cost.
  double input = 0, retrieval = 0, decoding = 0, unsplit = 0, submission = 0, unattributed = 0, starved = 0, busy = -1;
  bool after_startup = false;
  int evaluation_steps = 0;  // steady steps that ran an evaluation pass, left out of the shares (0: none left out)
  std::string text;  // "input-bound: the loop waited on input 86 % of steady time (retrieval 76 %, decoding 10 %)"
};

struct RunSummary {
  Headline headline;
  int steady_steps = 0, warmup_steps = 0;
  std::vector<std::pair<Verdict, int>> verdict_counts;       // over steady-state steps, most frequent first
  std::array<double, kClassCount> stall_ms{};                // steady-state totals by class
  double steady_window_ms = 0, steady_busy_ms = 0, steady_stall_ms = 0;
  std::array<double, kCauseCount> cause_ms{};                // steady-state totals by cause
  double decode_cpu_ratio = -1, read_cpu_ratio = -1;         // producers' cpu/wall over steady steps (-1 unknown)
  double producer_runq_ratio = -1;  // producers' run-queue delay / wall over steady steps (-1 not sampled)
  double launches_per_step = 0, host_us_per_launch = 0, device_us_per_kernel = 0, host_us_between_launches = 0;
  std::optional<Verdict> dominant;                           // most frequent steady-state verdict (none: no steady step)
  std::vector<Advised> advice;                               // the recommendations, in order
};

// A rank's all-reduce after each step (ranks of an MPI job): its host side (the `collective` ranges,
// the wait for the other ranks included) and the device work those ranges enqueued (NCCL's kernels).
struct CollectiveSummary {
  std::size_t ranges = 0;                 // 0: the run had no collective
  double host_mean_ms = 0, host_p95_ms = 0;
  std::size_t device_records = 0;         // linked by correlation to calls inside the ranges
  double device_mean_ms = 0, device_p95_ms = 0;
  double device_bytes_per_range = 0;      // the records' bytes / ranges
};

struct Report {
  std::string device;
  Coverage coverage;
  std::vector<StepDiagnosis> steps;
  RunSummary summary;
  std::vector<SummaryRow> host_summary, api_summary, device_summary;
  std::vector<BandwidthRow> bandwidth;
  double device_busy_union_ms = 0, device_busy_sum_ms = 0;   // whole capture
  CollectiveSummary collective;
};

// The reference pipeline's configuration as the trace recorded it. `present` is false for traces of
// other programs; `problems` names every recorded value that did not parse (its default is used).
struct RecordedConfig {
  RunConfig config;
  bool present = false;                 // any run field was recorded
  std::vector<std::string> problems;
  std::vector<std::string> recorded;    // the fields the trace has (others are defaults, not facts)
  bool known(const RunField& field) const;
  // Recorded, by member: known<&RunConfig::workers>() (no key text at the call site).
  template <auto M>
  bool known() const {
    return known(run_field<M>());
  }
};
RecordedConfig recorded_config(const Trace& trace);
// Warm-up steps: the thresholds' override when >= 0, else the recorded `warmup`, else 0. The one place
// that decides it (diagnosis, trimming, scoring).
int warmup_steps(const Trace& trace, const Thresholds& thresholds = {});

Report diagnose(const Trace& trace, const Thresholds& thresholds = {});

std::string report_text(const Report& report, bool with_summaries = true);
std::string report_json(const Report& report);
// Per-step stacked bars: busy + stall by class, warm-up shaded.
std::string report_svg(const Report& report);
// One self-contained HTML page (no network): verdicts and advice, the chart, the step table with a
// verdict filter, the largest stall with trace timestamps, coverage, summaries. `source` names the trace.
std::string report_html(const Report& report, const std::string& source);

}  // namespace stalldx::diagnose
