// Run summary over steady-state steps and the advice that follows from it. Every rule switches on typed
// causes, the recorded run config and the host's facts — never on text — and never proposes what the
// config already has, nor more threads on a host whose threads were already starved of CPU.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "advice_rules.h"
#include "headline.h"
#include "startup_steps.h"
#include "summaries.h"
#include "uneven_input.h"
#include "whatif_internal.h"

namespace stalldx::diagnose {

namespace {
// Adds one steady step's stall (by class and by cause), window, busy and stall time to `s`'s totals.
void add_totals(RunSummary& s, const StepDiagnosis& step) {
  for (std::size_t c = 0; c < step.class_ms.size(); ++c) s.stall_ms[c] += step.class_ms[c];
  for (const CauseShare& c : step.causes) s.cause_ms[static_cast<std::size_t>(c.cause)] += c.ms;
  s.steady_window_ms += step.window_ms;
  s.steady_busy_ms += step.busy_ms;
  s.steady_stall_ms += step.stall_ms;
}

// Producers' cpu/wall over the steady-state batches (ranges with CPU time only); -1 when not sampled.
void producer_ratios(const Trace& t, const TraceIndex& ix, RunSummary& sum) {
  double r_cpu = 0, r_wall = 0, d_cpu = 0, d_wall = 0, q = 0, q_wall = 0;
  // Steady state: batches past the warm-up, and unbatched producer ranges (recorded programs) that
  // begin after the first steady step.
  std::int64_t steady_from = INT64_MIN;
  for (const HostRange* st : ix.steps)
    if (st->step >= ix.warmup) {
      steady_from = st->begin_ns;
      break;
    }
  std::vector<const HostRange*> unbatched;
  for (const HostRange* r : ix.unbatched_producers)
    if (r->begin_ns >= steady_from) unbatched.push_back(r);
  std::vector<std::pair<std::int64_t, const std::vector<const HostRange*>*>> groups;
  for (const auto& [batch, ranges] : ix.producer_by_batch) groups.emplace_back(batch, &ranges);
  groups.emplace_back(std::numeric_limits<std::int64_t>::max(), &unbatched);
  for (const auto& [batch, ranges_ptr] : groups) {
    if (batch < ix.warmup) continue;
    for (const HostRange* r : *ranges_ptr) {
      if (r->runq_ns >= 0) {
        q += static_cast<double>(r->runq_ns);
        q_wall += static_cast<double>(r->end_ns - r->begin_ns);
      }
      if (r->cpu_ns < 0) continue;
      (r->role == Role::retrieval ? r_cpu : d_cpu) += static_cast<double>(r->cpu_ns);
      (r->role == Role::retrieval ? r_wall : d_wall) += static_cast<double>(r->end_ns - r->begin_ns);
    }
  }
  (void)t;
  if (r_wall > 0) sum.read_cpu_ratio = r_cpu / r_wall;
  if (d_wall > 0) sum.decode_cpu_ratio = d_cpu / d_wall;
  if (q_wall > 0) sum.producer_runq_ratio = std::min(1.0, q / q_wall);
}
}  // namespace

void build_run_summary(const Trace& t, const TraceIndex& ix, const Thresholds& th, Report& rep) {
  RunSummary& sum = rep.summary;
  std::array<int, kVerdictCount> counts{};
  int launch_steps = 0;
  double launches = 0, host_us = 0, device_us = 0, pace_us = 0;
  for (const StepDiagnosis& s : rep.steps) {
    if (s.warmup) { sum.warmup_steps++; continue; }
    sum.steady_steps++;
    counts[static_cast<std::size_t>(s.verdict)]++;
    add_totals(sum, s);
    if (s.launch.launches > 0) {
      ++launch_steps;
      launches += s.launch.launches;
      host_us += s.launch.host_us_per_launch;
      device_us += s.launch.device_us_per_kernel;
      pace_us += s.launch.host_us_between_launches;
    }
  }
  if (launch_steps > 0) {
    sum.launches_per_step = launches / launch_steps;
    sum.host_us_per_launch = host_us / launch_steps;
    sum.device_us_per_kernel = device_us / launch_steps;
    sum.host_us_between_launches = pace_us / launch_steps;
  }
  producer_ratios(t, ix, sum);
  // Most frequent first; ties in the order of their names (as reports list them).
  for (int v = 0; v < kVerdictCount; ++v)
    if (counts[static_cast<std::size_t>(v)] > 0) sum.verdict_counts.push_back({static_cast<Verdict>(v), counts[static_cast<std::size_t>(v)]});
  const bool standin = rep.coverage.standin;
  std::sort(sum.verdict_counts.begin(), sum.verdict_counts.end(), [standin](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : verdict_name(a.first, standin) < verdict_name(b.first, standin);
  });
  if (!sum.verdict_counts.empty()) sum.dominant = sum.verdict_counts.front().first;

  auto& advice = sum.advice;
  const auto say = [&](Advice kind, std::string text) { advice.push_back(Advised{kind, std::move(text)}); };

  if (rep.steps.empty()) {
    // Nothing to weigh: the one next thing to do is to say where the steps are.
    say(Advice::name_steps,
        "no steps found: name the range around each iteration 'step N' or 'iter N' (train_step, Iteration, batch_N also read), or pass "
        "--step REGEX (found anywhere in a range name, as grep); map other names with --roles FILE. A Python loop over a torch "
        "DataLoader needs no change under `stalldx record`");
    return;
  }
  if (sum.steady_steps == 0) say(Advice::record_longer, "no steady-state steps were recorded: run more steps than warm-up");
  else if (sum.steady_steps < th.short_capture_steps)
    say(Advice::record_longer, fmt::format("this capture is too short to describe steady state ({} steady steps): record more steps", sum.steady_steps));
  // Start-up counted as steady state is named with the warm-up that sets it aside; the advice is about
  // the steps after it (`basis`, their totals): the totals printed include it.
  // Steps that ran an evaluation pass (a minority of them) are left out the same way: their waits are
  // the evaluation loader's, named by their own advice, not the training's input.
  const StartupSteps startup = find_startup_steps(rep);
  const EvaluationPasses evaluation = find_evaluation_passes(t, ix, rep, startup.count);
  const std::set<std::int64_t> set_aside = evaluation.set_aside();
  sum.headline = make_headline(rep, startup, set_aside);
  RunSummary basis;
  int startup_left = startup.count;
  for (const StepDiagnosis& s : rep.steps) {
    if (s.warmup) continue;
    if (startup_left > 0) --startup_left;
    else if (set_aside.count(s.step) == 0) add_totals(basis, s);
  }
  const AdviceInputs in{t, ix, th, rep, sum, basis, startup, advice};
  const IteratorRestarts restarts = find_iterator_restarts(ix, rep, startup.count);
  advise_iterator_per_step(in, restarts);
  advise_worker_restarts(in, restarts);
  advise_evaluation_in_steps(in, evaluation);
  const bool evaluation_costly = evaluation.costly(kEvaluationShare);
  // The steps behind those findings ask what the run's finding says, not what their decode's CPU ratio would.
  const bool per_step = restarts.found(), per_epoch = restarts.costly_epoch_starts(kWorkerRestartShare);
  for (StepDiagnosis& s : rep.steps) {
    const bool waited_on_input = s.verdict == Verdict::decoding || s.verdict == Verdict::retrieval || s.verdict == Verdict::input ||
                                 s.verdict == Verdict::mixed || s.verdict == Verdict::no_device_records;
    if (!waited_on_input) continue;
    if (per_step && restarts.fresh.count(s.step) > 0)
      s.next_question = fmt::format("this step {} and waited for its first batch: make the iterator once (it = iter(loader) "
                                    "before the loop, next(it) in it)",
                                    restarts.persistent() ? "restarted the DataLoader's iterator" : "started a new DataLoader iterator (its workers)");
    else if (evaluation_costly && evaluation.steps.count(s.step) > 0)
      s.next_question = "this step ran an evaluation pass (a DataLoader iterated without a backward pass) and waited on its loader: is "
                        "that pass part of what you want to time, and does its DataLoader keep its workers (persistent_workers=True)?";
    else if (per_epoch && restarts.new_iterator_steps.count(s.step) > 0)
      s.next_question = "this step began an epoch's new DataLoader iterator (its worker processes started anew) and waited for its first "
                        "batch: persistent_workers=True keeps the workers from one epoch to the next";
  }
  if (!rep.coverage.device_records) {
    say(Advice::collect_device_records, "collect device records (CUPTI) to judge stalls against the device's timeline");
    // Without the device's timeline the loop's waits for input are still measured: what would feed it
    // faster holds as it does with them (a CPU-only loop, a recording with CUPTI off). Submission and
    // the device's idle time are not known, so nothing is said of them.
    advise_startup(in);
    advise_input_shape(in);
    advise_retrieval(in);
    advise_decoding(in);
    return;
  }
  advise_startup(in);
  advise_input_shape(in);
  advise_retrieval(in);
  advise_decoding(in);
  advise_submission(in);
  advise_unattributed(in);
  if (rep.coverage.confidence != Confidence::high) say(Advice::low_confidence, "confidence " + confidence_text(rep.coverage));
}

}  // namespace stalldx::diagnose
