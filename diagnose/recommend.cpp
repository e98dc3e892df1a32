// Run summary over steady-state steps and the advice that follows from it. Every rule switches on typed
// causes, the recorded run config and the host's facts — never on text — and never proposes what the
// config already has, nor more threads on a host whose threads were already starved of CPU.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

#include "headline.h"
#include "startup_steps.h"
#include "summaries.h"
#include "uneven_input.h"
#include "whatif_internal.h"

namespace stalldx::diagnose {

namespace {
double cause(const RunSummary& s, Cause c) { return s.cause_ms[static_cast<std::size_t>(c)]; }

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
  const RecordedConfig recorded = recorded_config(t);
  const bool ours = recorded.known<&RunConfig::workers>();
  const RunConfig& cfg = recorded.config;
  const HostFacts& host = t.meta.host_facts;
  const int cores = host.usable_cpus > 0 ? host.usable_cpus : host.cpus;

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
  const StartupSteps startup = find_startup_steps(rep);
  sum.headline = make_headline(rep, startup);
  if (!rep.coverage.device_records) {
    say(Advice::collect_device_records, "collect device records (CUPTI) to judge stalls against the device's timeline");
    return;
  }
  RunSummary basis;
  int startup_left = startup.count;
  for (const StepDiagnosis& s : rep.steps) {
    if (s.warmup) continue;
    if (startup_left > 0) --startup_left;
    else add_totals(basis, s);
  }
  if (startup.count > 0) {
    const int warmup = sum.warmup_steps + startup.count;
    const std::string which = startup.count == 1
        ? fmt::format("the first steady step took {:.0f} ms, {:.1f}x the median step ({:.1f} ms) and slower than any later step",
                      startup.ms, startup.ms / startup.median_ms, startup.median_ms)
        : fmt::format("the first {} steady steps took {:.0f} ms together, each at least {:.1f}x the median step ({:.1f} ms) and "
                      "slower than any later step",
                      startup.count, startup.ms, kStartupSlowFactor, startup.median_ms);
    const char* them = startup.count == 1 ? "it" : "them";
    say(Advice::startup_in_steady_state,
        fmt::format("start-up counted as steady state: {} — {:.0f}% of the steady window, likely lazy initialisation, autotuning (cuDNN "
                    "benchmark) or the loader's first batches; the totals include {}, the advice below does not: set {} aside with "
                    "--warmup {} (stalldx diagnose or stalldx record)",
                    which, 100 * startup.share, them, them, warmup));
  }
  const double stall = basis.steady_stall_ms;
  // A class is worth advice when it holds a good share of a stall that matters (>= 2% of the steady
  // window), not when it holds most of nothing.
  const bool stall_matters = basis.steady_window_ms > 0 && stall >= 0.02 * basis.steady_window_ms;
  const auto share = [&](StallClass c) { return stall_matters ? basis.stall_ms[static_cast<std::size_t>(c)] / stall : 0; };
  const UnevenInput uneven = find_uneven_input(ix, rep, startup.count);
  if (uneven.found) {
    const int steps = uneven.waited + uneven.ready;
    const std::string shape =
        fmt::format("{} of {} steady steps waited for their batch ({:.0f} ms each on average), the other {} found theirs ready — a batch "
                    "came every {:.1f} ms against {:.1f} ms for a step that did not wait",
                    uneven.waited, steps, uneven.wait_ms / uneven.waited, uneven.ready, basis.steady_window_ms / steps,
                    uneven.ready_window_ms / uneven.ready);
    if (uneven.spikes())
      say(Advice::input_spikes,
          fmt::format("input spikes: {}; the batches waited for took {:.0f} ms to make against {:.0f} ms for the others — a few slow batches "
                      "hold up the run, not a slow loader: look at what those batches read or decode (a storage hiccup, some large files)",
                      shape, uneven.waited_make_ms, uneven.ready_make_ms));
    else
      say(Advice::bursty_input,
          fmt::format("input arrives in bursts: {}: input limits the run though most steps are not stalled themselves{}", shape,
                      uneven.waited_make_ms > 0 && uneven.ready_make_ms > 0
                          ? fmt::format(" (every batch took about as long to make, {:.0f} ms against {:.0f} ms: made in parallel, delivered together)",
                                        uneven.waited_make_ms, uneven.ready_make_ms)
                          : " (loader workers that each build a whole batch finish together)"));
  }
  // "Keeps up" only where the loop's waits on input are a small part of its time: a run whose most
  // frequent verdict is device-bound may still have waited on input for much of it (a few long waits).
  double input_stall = 0;
  for (int c = 0; c < kCauseCount; ++c)
    if (input_cause(static_cast<Cause>(c))) input_stall += basis.cause_ms[static_cast<std::size_t>(c)];
  const double input_share = basis.steady_window_ms > 0 ? input_stall / basis.steady_window_ms : 0;
  if (sum.dominant == Verdict::device_bound && !uneven.found && input_share < kKeepsUpShare &&
      !rep.coverage.device_links_doubtful)  // device work linked to no call: its steps, so the stalls, are guesses
    say(Advice::input_keeps_up,
        fmt::format("{}: the input pipeline keeps up (the loop waited on input {:.1f}% of steady-state time{}); more workers or prefetch buy nothing",
                    verdict_name(Verdict::device_bound, rep.coverage.standin), 100 * input_share, startup.count > 0 ? " after start-up" : ""));

  if (share(StallClass::retrieval) >= 0.3) {
    if (recorded.known<&RunConfig::read_bandwidth_mbps>() && cfg.read_bandwidth_mbps > 0)
      say(Advice::bandwidth_cap, fmt::format("retrieval: {:.0f} ms of stall under a {} MB/s read bandwidth cap — more workers share the same "
                                             "bandwidth and buy nothing; only faster storage (or smaller files) helps",
                                             basis.stall_ms[0], cfg.read_bandwidth_mbps));
    else if (cause(basis, Cause::storage_wait) >= cause(basis, Cause::storage_read))
      say(Advice::storage_latency,
          fmt::format("retrieval: {:.0f} ms of stall with reads mostly off-CPU (cpu/wall {:.2f}): waiting on storage — more concurrent reads{} "
                      "hide latency while the storage has bandwidth to spare; faster or local storage; prefetch ({}) only absorbs spikes",
                      basis.stall_ms[0], sum.read_cpu_ratio, ours ? fmt::format(" (workers {} now)", cfg.workers) : "",
                      ours ? std::to_string(cfg.prefetch) : "depth"));
    else
      say(Advice::storage_latency, fmt::format("retrieval: {:.0f} ms of stall reading files on CPU: compare read time per file with the step time",
                                               basis.stall_ms[0]));
  }

  if (share(StallClass::decoding) >= 0.3) {
    const double denied = cause(basis, Cause::decode_starved) + cause(basis, Cause::read_starved);
    const bool starved = denied > cause(basis, Cause::decode_cpu_bound) ||
                         (sum.producer_runq_ratio >= 0 ? sum.producer_runq_ratio >= th.starved_runq_ratio
                                                       : sum.decode_cpu_ratio >= 0 && sum.decode_cpu_ratio < th.contention_cpu_ratio);
    const bool full = ours && cores > 0 && cfg.workers + 1 >= cores;  // workers + the consumer already fill the cores
    if (starved || full) {
      std::string why;
      if (starved) {
        why = sum.producer_runq_ratio >= 0
                  ? fmt::format("the producer threads waited for a CPU {:.0f}% of their wall time (runnable, not running)",
                                100 * sum.producer_runq_ratio)
                  : fmt::format("the decode threads ran only {:.0f}% of their wall time (starved of CPU)", 100 * std::max(0.0, sum.decode_cpu_ratio));
        std::string others;
        if (recorded.known<&RunConfig::competing_threads>() && cfg.competing_threads > 0) others = fmt::format("{} competing threads in this run", cfg.competing_threads);
        const double load = std::max(host.load_1m_start, host.load_1m_end);
        if (cores > 0 && load > cores) others += fmt::format("{}load {:.1f} on {} cores", others.empty() ? "" : "; ", load, cores);
        if (ours && cores > 0 && cfg.workers + 1 > cores)
          others += fmt::format("{}{} workers + the consumer on {} cores", others.empty() ? "" : "; ", cfg.workers, cores);
        why += fmt::format(" — more workers would make it worse: give the pipeline the CPU it is denied ({})",
                           others.empty() ? "find what else runs on the host" : others);
      } else {
        why = fmt::format("{} workers + the consumer already fill the {} usable cores — more workers cannot run; cheaper decode is what helps",
                          cfg.workers, cores);
      }
      say(Advice::oversubscribed, fmt::format("decoding: {:.0f} ms of stall; {}", basis.stall_ms[1], why));
    } else {
      // By how much: the what-if model at the most workers that still leave the consumer a core.
      std::string expect;
      if (ours && cores > 1) {
        const StageCosts costs = stage_costs(t, ix, rep);
        const int target = std::max(cfg.workers + 1, std::min(cores - 1, 2 * cfg.workers));
        if (costs.valid) {
          const Prediction now = predict(costs, cfg.workers), then = predict(costs, target);
          expect = fmt::format("; predicted {:.0f} → {:.0f} img/s at {} workers (bound by {})", now.images_per_second,
                               then.images_per_second, target, then.bound);
        }
      }
      say(Advice::more_workers, fmt::format("decoding: {:.0f} ms of stall on CPU-bound decode — more workers{}{}", basis.stall_ms[1],
                                            ours ? fmt::format(" (now {}, {} usable cores)", cfg.workers, cores > 0 ? std::to_string(cores) : "?") : "",
                                            expect));
    }
    if (recorded.known<&RunConfig::dct_scaling>() && !cfg.dct_scaling) say(Advice::enable_dct_scaling, "decoding: enable DCT-scaled decode (--dct-scaling true)");
    if (recorded.known<&RunConfig::roi_decode>() && !cfg.roi_decode) say(Advice::enable_roi_decode, "decoding: enable region-of-interest decode (--roi-decode true)");
    if (recorded.known<&RunConfig::output>() && cfg.output != OutputFormat::uint8_nhwc)
      say(Advice::uint8_output, "decoding: uint8 output with normalization on the device (--output uint8) cuts the host's per-pixel work");
  }

  if (share(StallClass::submission) >= 0.3) {
    const double sub = basis.stall_ms[2];
    const auto big = [&](Cause c) { return sub > 0 && cause(basis, c) >= 0.2 * sub; };
    if (big(Cause::pageable_copy) && !(recorded.known<&RunConfig::memory>() && cfg.memory == MemoryKind::pinned && !cfg.pin_per_batch))
      say(Advice::pinned_memory, fmt::format("submission: {:.0f} ms in pageable copies — allocate batch buffers pinned once{}", cause(basis, Cause::pageable_copy),
                                             recorded.known<&RunConfig::memory>() ? " (--memory pinned)" : " (cudaHostAlloc, or pin_memory=True)"));
    if (big(Cause::per_sample_copies) && !(recorded.known<&RunConfig::copy>() && cfg.copy == CopyStyle::batch))
      say(Advice::batch_copies, fmt::format("submission: {:.0f} ms in per-sample copies — one cudaMemcpyAsync per batch{}", cause(basis, Cause::per_sample_copies),
                                            recorded.known<&RunConfig::copy>() ? " (--copy batch)" : ""));
    if (big(Cause::host_allocation) && !(recorded.known<&RunConfig::pin_per_batch>() && recorded.known<&RunConfig::memory>() && !cfg.pin_per_batch && cfg.memory == MemoryKind::pinned))
      say(Advice::pin_once, fmt::format("submission: {:.0f} ms pinning/allocating inside the step — pin the buffers once, up front{}",
                                        cause(basis, Cause::host_allocation), recorded.known<&RunConfig::pin_per_batch>() && cfg.pin_per_batch ? " (drop --pin-per-batch)" : ""));
    if (big(Cause::synchronization) && !(recorded.known<&RunConfig::sync_every_step>() && !cfg.sync_every_step))
      say(Advice::drop_step_sync, fmt::format("submission: {:.0f} ms synchronizing inside the step — drop the per-step sync and let the in-flight "
                                              "limit pace the loop{}", cause(basis, Cause::synchronization), recorded.known<&RunConfig::sync_every_step>() ? " (drop --sync-every-step)" : ""));
    if (big(Cause::launch_rate))
      say(Advice::launch_rate,
          fmt::format("submission: {:.0f} ms waiting on kernel launches ({:.0f} launches a step, one every {:.1f} µs of host time — {:.1f} µs "
                      "inside each call — while kernels ran {:.1f} µs on the device) — capture the step in a CUDA Graph, fuse into fewer, larger "
                      "kernels{}, give the launching thread a core of its own{}",
                      cause(basis, Cause::launch_rate), sum.launches_per_step, sum.host_us_between_launches, sum.host_us_per_launch,
                      sum.device_us_per_kernel,
                      recorded.known<&RunConfig::step_kernels>() ? fmt::format(" (--step-kernels {} now)", cfg.step_kernels) : "",
                      ours && cores > 0 && cfg.workers + 1 >= cores ? fmt::format(" (workers {} + consumer fill the {} cores)", cfg.workers, cores) : ""));
    if (big(Cause::host_paced))
      say(Advice::host_paced,
          fmt::format("submission: {:.0f} ms with the device idle until the loop launched its next work (host-paced, outside any wait "
                      "for input) — the loop's CPU work between kernels sets the pace: find it (torch.profiler, py-spy), capture the step "
                      "(CUDA Graphs, torch.compile) or move that work out of the step",
                      cause(basis, Cause::host_paced)));
  }
  if (share(StallClass::submission) >= 0.3 && cause(basis, Cause::consumer_starved) >= 0.2 * basis.stall_ms[2]) {
    const double load = std::max(host.load_1m_start, host.load_1m_end);
    std::string others;
    if (recorded.known<&RunConfig::competing_threads>() && cfg.competing_threads > 0) others = fmt::format("{} competing threads in this run", cfg.competing_threads);
    if (cores > 0 && load > cores) others += fmt::format("{}load {:.1f} on {} cores", others.empty() ? "" : "; ", load, cores);
    say(Advice::consumer_starved,
        fmt::format("submission: {:.0f} ms with the submitting thread runnable but not running — the host is oversubscribed: give that "
                    "thread a core of its own, fewer loader threads than cores{}",
                    cause(basis, Cause::consumer_starved), others.empty() ? "" : " (" + others + ")"));
  }
  if (share(StallClass::unattributed) >= 0.3) {
    if (cause(basis, Cause::input_unsplit) >= 0.5 * basis.stall_ms[3])
      say(Advice::split_wait, fmt::format("{:.0f} ms waiting for batches whose producers left no records: the wait cannot be split into "
                                          "retrieval and decoding — annotate the workers' read and decode", cause(basis, Cause::input_unsplit)));
    else
      say(Advice::add_ranges, fmt::format("{:.0f} ms of stall happened outside any wait/submit range: add ranges there before concluding",
                                          basis.stall_ms[3]));
  }
  if (rep.coverage.confidence != Confidence::high) say(Advice::low_confidence, "confidence " + confidence_text(rep.coverage));
}

}  // namespace stalldx::diagnose
