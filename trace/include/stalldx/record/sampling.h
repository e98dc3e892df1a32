// Device recording in windows (`stalldx record --sample`): CUPTI attached for K steps in every N, detached
// between, so a program pays CUPTI's per-call cost only inside windows. The plan and the scheduler are
// pure (no CUDA): the injection library feeds them the step boundaries it sees live; the merger and the
// diagnosis read back where the windows were. This header is the format's one definition.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stalldx/trace_model.h"

namespace stalldx::record {

// Which steps get device records: the first `full` steps (start-up, where verdicts change fastest),
// then `window` steps in every `period`. window == period: every step (full recording).
struct SamplePlan {
  std::int64_t full = 0;
  std::int64_t window = 1, period = 1;
  bool on_demand = false;  // `record --on-demand`: no device records until `stalldx capture` asks

  // "K/N" (K steps in every N), "K/N+F" (after F full steps), "full", "auto" (kAutoPlan) or "on-demand".
  // False with a message "TEXT: what is wrong" (the caller names its option: --sample, --sampled-view).
  static bool parse(std::string_view text, SamplePlan& out, std::string& error);
  std::string text() const;   // the parse() form: "5/100+50"
  std::string words() const;  // for people: "every step for the first 50 steps, then 5 steps in every 100"
  bool samples() const { return on_demand || window < period; }
  // Whether the step that begins at boundary `index` (0 = the first step) is recorded. Before the first
  // boundary (index < 0: the program's start-up) device recording is on when the plan starts full.
  bool records(std::int64_t index) const;
  bool operator==(const SamplePlan&) const = default;
};
// The default for long runs (`--sample` with no value): every step of the first 50, then 5 in every 100.
inline constexpr std::string_view kAutoPlan = "5/100+50";
// How `record` passes the plan to the injection library (its parse() form); unset: full recording.
inline constexpr const char* kSampleEnv = "STALLDX_SAMPLE";
// Where the program marks no steps live (no step ranges, no Python loop): windows by time, one tick a
// second — K seconds in every N after F seconds.
inline constexpr std::int64_t kTickNs = 1'000'000'000;

// detach: the window's steps end here; a recorder stops taking new calls' records but keeps the device
// records of the work they launched coming until the next action (a device running behind the host runs
// a window's last steps' work after the window closed).
// release: the boundary after a detach, when nothing else happens there: the window's work has had a
// step to run; stop its device records now. Any other action at that boundary releases too.
// prepare: the next boundary attaches (the step that begins here is not recorded): a recorder that
// detaches between windows may make CUPTI ready now, off the program's threads, so that attaching at the
// next boundary is cheap.
enum class WindowAction : std::uint8_t { none, attach, detach, prepare, release };

// One process's window state: on_boundary() says what to do at each boundary. Not thread-safe (its
// owner serializes boundaries).
class WindowScheduler {
 public:
  explicit WindowScheduler(SamplePlan plan) : plan_(plan), on_(plan.records(-1)) {}
  bool recording() const { return on_; }
  WindowAction on_boundary(std::int64_t index);
  // `stalldx capture`: the next `steps` steps are recorded, whatever the plan says.
  void capture(std::int64_t steps) { capture_left_ = steps; }
  // The recorder could not attach at the boundary that asked (it was busy): recording stays off, and
  // the next boundary that the plan records attaches again.
  void attach_refused() { on_ = false; }
  // Whether the step after boundary `index` is to be recorded too (a refused attach can still open a
  // window there).
  bool wants_next(std::int64_t index) const { return capture_left_ > 0 || plan_.records(index + 1); }
  const SamplePlan& plan() const { return plan_; }

 private:
  SamplePlan plan_;
  bool on_;
  bool draining_ = false;  // the boundary before detached: this one releases
  std::int64_t capture_left_ = 0;
};

// `stalldx capture PID --steps K` asks a recording for K steps' device records by writing this file in
// its parts folder: one line "<request id> <K>"; every recorded process of the folder polls it and
// honours each id once, from its next step on.
inline constexpr const char* kCaptureFile = "capture";

// A span of CLOCK_MONOTONIC time in which a process had device recording on.
struct DeviceWindow {
  std::int64_t begin_ns = 0, end_ns = 0;
  std::int64_t pid = 0;
  bool operator==(const DeviceWindow&) const = default;
};

// Step numbers a mark may carry (a forged larger one is not read: ids made from it cannot overflow).
inline constexpr std::int64_t kMaxStepNumber = 1'000'000'000'000'000;
// A window edge placed at a step boundary: the step that began at `begin_ns` was the run's `step`-th
// (counted from 0, as the process saw steps live) — how a trace that begins mid-run (a long run's
// rings) numbers its steps as the run did.
struct StepMark {
  std::int64_t begin_ns = 0, step = 0;
  bool operator==(const StepMark&) const = default;
};
// One process's <pid>.windows file (part_format.h): its windows by number, an unclosed one ending at
// `end_ns`, and the plan it ran under. Lines cut by a kill or not understood are skipped.
struct WindowMarks {
  std::vector<std::pair<std::int64_t, DeviceWindow>> windows;  // (window number, span), in file order
  std::optional<SamplePlan> plan;
  bool stepped = false;          // an edge was placed by a step (not only the start): the process marks steps
  std::vector<StepMark> steps;   // the edges placed by steps, in file (= time) order
};
WindowMarks parse_window_marks(std::string_view text, std::int64_t pid, std::int64_t end_ns);
// The plan's line, written first: "plan \t <SamplePlan::text()>".
std::string plan_mark(const SamplePlan& plan);

// The trace metadata keys (meta.config) that carry the plan and the windows of a sampled recording;
// absent: device records cover the whole recording.
inline constexpr const char* kSamplePlanKey = "device_sampling";
inline constexpr const char* kWindowsKey = "device_windows";
// Present when a process's CUPTI was not finalized between windows although asked to (kept attached,
// its records off): why, in words (CUDA graphs in use). A window part carries it; the merge keeps it.
inline constexpr const char* kCuptiKeptKey = "cupti_kept_attached";
void set_device_windows(TraceMeta& meta, const SamplePlan& plan, const std::vector<DeviceWindow>& windows);
// The windows of a sampled trace, sorted by begin; nullopt when the trace was not sampled (every step
// had device records). Malformed entries are skipped and counted in `bad`.
std::optional<std::vector<DeviceWindow>> device_windows(const TraceMeta& meta, std::size_t* bad = nullptr);

// The trace a sampled recording of the same run would have given: CUDA calls kept only inside the
// windows `plan` opens over `full`'s steps (from a recorded step's begin to the next unrecorded step's;
// from the start when the plan starts full), with the device work they launched, whenever it ran;
// device work without a call kept by when it began; the windows in the metadata. The steps must be
// assigned (merge.h assign_steps). Its diagnosis against `full`'s, step by step, measures the sampled
// rules on the very same steps — free of what differs between two runs (`eval --sampled-view`).
Trace sampled_view(const Trace& full, const SamplePlan& plan);

}  // namespace stalldx::record
