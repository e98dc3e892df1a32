#include "advice_rules.h"

#include <fmt/format.h>

#include <algorithm>

#include "headline.h"
#include "uneven_input.h"
#include "whatif_internal.h"

namespace stalldx::diagnose {

double AdviceInputs::share(StallClass c) const {
  const double total = basis.steady_stall_ms;
  const bool matters = basis.steady_window_ms > 0 && total >= 0.02 * basis.steady_window_ms;
  return matters ? stall(c) / total : 0;
}

std::string AdviceInputs::competition() const {
  std::string others;
  if (recorded.known<&RunConfig::competing_threads>() && cfg.competing_threads > 0) others = fmt::format("{} competing threads in this run", cfg.competing_threads);
  const double load = std::max(host.load_1m_start, host.load_1m_end);
  if (cores > 0 && load > cores) others += fmt::format("{}load {:.1f} on {} cores", others.empty() ? "" : "; ", load, cores);
  return others;
}

void advise_startup(const AdviceInputs& in) {
  if (in.startup.count == 0) return;
  const int warmup = in.sum.warmup_steps + in.startup.count;
  const std::string which = in.startup.count == 1
      ? fmt::format("the first steady step took {:.0f} ms, {:.1f}x the median step ({:.1f} ms) and slower than any later step",
                    in.startup.ms, in.startup.ms / in.startup.median_ms, in.startup.median_ms)
      : fmt::format("the first {} steady steps took {:.0f} ms together, each at least {:.1f}x the median step ({:.1f} ms) and "
                    "slower than any later step",
                    in.startup.count, in.startup.ms, kStartupSlowFactor, in.startup.median_ms);
  const char* them = in.startup.count == 1 ? "it" : "them";
  in.say(Advice::startup_in_steady_state,
      fmt::format("start-up counted as steady state: {} — {:.0f}% of the steady window, likely lazy initialisation, autotuning (cuDNN "
                  "benchmark) or the loader's first batches; the totals include {}, the advice below does not: set {} aside with "
                  "--warmup {} (stalldx diagnose or stalldx record)",
                  which, 100 * in.startup.share, them, them, warmup));
}

void advise_iterator_per_step(const AdviceInputs& in, const IteratorRestarts& r) {
  if (!r.found()) return;
  const bool persistent = r.persistent();  // the same iterator restarted: its workers persist already
  const auto fresh = static_cast<double>(r.fresh.size());
  in.say(Advice::iterator_per_step,
         fmt::format("{} every step: {} of {} steady steps waited for the first batch of a pass ({:.0f} ms of input waiting{} a step, "
                     "{:.0f}% of steady time) — {}nothing is prefetched across steps: make the iterator once (it = iter(loader) before "
                     "the loop, next(it) in it){}",
                     persistent ? "the DataLoader restarted" : "a new DataLoader iterator", r.fresh.size(), r.steps, r.input_ms / fresh,
                     persistent ? "" : " and worker start-up", r.window_ms > 0 ? 100 * r.input_ms / r.window_ms : 0,
                     persistent ? "" : "each one starts the loader's workers anew and ", persistent ? "" : ", or persistent_workers=True"));
}

void advise_worker_restarts(const AdviceInputs& in, const IteratorRestarts& r) {
  if (!r.costly_epoch_starts(kWorkerRestartShare)) return;
  in.say(Advice::worker_restarts,
         fmt::format("worker start-up every epoch: {} steps began a new DataLoader iterator (its worker processes started, then its first "
                     "batch made), {:.0f} ms each between the steps and over the median step ({:.0f} ms) — {:.0f}% of the steps' time: "
                     "persistent_workers=True keeps the workers from one epoch to the next",
                     r.new_iterators, r.epoch_start_ms() / r.new_iterators, r.median_window_ms,
                     100 * r.epoch_start_ms() / (r.window_ms + r.new_iterator_gap_ms)));
}

void advise_evaluation_in_steps(const AdviceInputs& in, const EvaluationPasses& e) {
  if (!e.costly(kEvaluationShare)) return;
  std::string parts;
  if (e.wait_ms > 0) parts = fmt::format("{:.0f} ms of it waiting for the evaluation DataLoader's batches", e.wait_ms);
  if (e.worker_starts > 0)
    parts += fmt::format("{}{:.0f} ms starting its worker processes ({} time{})", parts.empty() ? "" : ", ", e.worker_start_ms,
                         e.worker_starts, e.worker_starts == 1 ? "" : "s");
  in.say(Advice::evaluation_in_steps,
         fmt::format("evaluation inside {} training step{}: {} iterations without a backward pass took {:.0f} ms, {:.0f}% of steady time{}{} — "
                     "{}those steps' waits on it are the evaluation's input, not the training's{}: evaluate less often or on fewer batches "
                     "if that is too much",
                     e.steps.size(), e.steps.size() == 1 ? "" : "s", e.iterations, e.ms, 100 * e.ms / e.window_ms, parts.empty() ? "" : "; ",
                     parts,
                     e.worker_starts > 1 ? "persistent_workers=True on the evaluation DataLoader keeps its workers from one pass to the next; "
                                         : "",
                     e.set_aside().empty() ? "" : " (the headline and the advice on the training's input leave those steps out)"));
}

void advise_input_shape(const AdviceInputs& in) {
  const UnevenInput uneven = find_uneven_input(in.ix, in.rep, in.startup.count);
  if (uneven.found) {
    const int steps = uneven.waited + uneven.ready;
    const std::string shape =
        fmt::format("{} of {} steady steps waited for their batch ({:.0f} ms each on average), the other {} found theirs ready — a batch "
                    "came every {:.1f} ms against {:.1f} ms for a step that did not wait",
                    uneven.waited, steps, uneven.wait_ms / uneven.waited, uneven.ready, in.basis.steady_window_ms / steps,
                    uneven.ready_window_ms / uneven.ready);
    if (uneven.spikes())
      in.say(Advice::input_spikes,
          fmt::format("input spikes: {}; the batches waited for took {:.0f} ms to make against {:.0f} ms for the others — a few slow batches "
                      "hold up the run, not a slow loader: look at what those batches read or decode (a storage hiccup, some large files)",
                      shape, uneven.waited_make_ms, uneven.ready_make_ms));
    else
      in.say(Advice::bursty_input,
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
    if (input_cause(static_cast<Cause>(c))) input_stall += in.basis.cause_ms[static_cast<std::size_t>(c)];
  const double input_share = in.basis.steady_window_ms > 0 ? input_stall / in.basis.steady_window_ms : 0;
  if (in.sum.dominant == Verdict::device_bound && !uneven.found && input_share < kKeepsUpShare &&
      !in.rep.coverage.device_links_doubtful)  // device work linked to no call: its steps, so the stalls, are guesses
    in.say(Advice::input_keeps_up,
        fmt::format("{}: the input pipeline keeps up (the loop waited on input {:.1f}% of steady-state time{}); more workers or prefetch buy nothing",
                    verdict_name(Verdict::device_bound, in.rep.coverage.standin), 100 * input_share, in.startup.count > 0 ? " after start-up" : ""));
}

void advise_retrieval(const AdviceInputs& in) {
  if (in.share(StallClass::retrieval) < 0.3) return;
  if (in.recorded.known<&RunConfig::read_bandwidth_mbps>() && in.cfg.read_bandwidth_mbps > 0)
    in.say(Advice::bandwidth_cap, fmt::format("retrieval: {:.0f} ms of stall under a {} MB/s read bandwidth cap — more workers share the same "
                                           "bandwidth and buy nothing; only faster storage (or smaller files) helps",
                                           in.stall(StallClass::retrieval), in.cfg.read_bandwidth_mbps));
  else if (in.cause(Cause::storage_wait) >= in.cause(Cause::storage_read))
    in.say(Advice::storage_latency,
        fmt::format("retrieval: {:.0f} ms of stall with reads mostly off-CPU (cpu/wall {:.2f}): waiting on storage — more concurrent reads{} "
                    "hide latency while the storage has bandwidth to spare; faster or local storage; prefetch ({}) only absorbs spikes",
                    in.stall(StallClass::retrieval), in.sum.read_cpu_ratio, in.ours ? fmt::format(" (workers {} now)", in.cfg.workers) : "",
                    in.ours ? std::to_string(in.cfg.prefetch) : "depth"));
  else
    in.say(Advice::storage_latency, fmt::format("retrieval: {:.0f} ms of stall reading files on CPU: compare read time per file with the step time",
                                             in.stall(StallClass::retrieval)));
}

void advise_decoding(const AdviceInputs& in) {
  if (in.share(StallClass::decoding) < 0.3) return;
  const double denied = in.cause(Cause::decode_starved) + in.cause(Cause::read_starved);
  const bool producers_starved = denied > in.cause(Cause::decode_cpu_bound) ||
                                 (in.sum.producer_runq_ratio >= 0 ? in.sum.producer_runq_ratio >= in.th.starved_runq_ratio
                                                               : in.sum.decode_cpu_ratio >= 0 && in.sum.decode_cpu_ratio < in.th.contention_cpu_ratio);
  // The loop waiting for a CPU tells the same of producers the trace cannot see (a Pool's or a Process's
  // children, threads without ranges): the host's cores are taken.
  const bool starved = producers_starved || in.ix.loop_starved();
  const bool full = in.ours && in.cores > 0 && in.cfg.workers + 1 >= in.cores;  // workers + the consumer already fill the cores
  // Another program's own decoding threads + its loop fill the host's cores (seen in the trace): the same.
  const bool foreign_full = !in.ours && in.ix.decoders_fill_cores();
  if (starved || full || foreign_full) {
    std::string why;
    if (starved) {
      why = !producers_starved
                ? fmt::format("the loop itself waited for a CPU {:.0f}% of the time it could run (runnable, not running): the host's cores "
                              "are all taken",
                              100 * in.ix.loop_denied)
            : in.sum.producer_runq_ratio >= 0
                ? fmt::format("the producer threads waited for a CPU {:.0f}% of their wall time (runnable, not running)",
                              100 * in.sum.producer_runq_ratio)
                : fmt::format("the decode threads ran only {:.0f}% of their wall time (starved of CPU)", 100 * std::max(0.0, in.sum.decode_cpu_ratio));
      std::string others = in.competition();
      if (in.ours && in.cores > 0 && in.cfg.workers + 1 > in.cores)
        others += fmt::format("{}{} workers + the consumer on {} cores", others.empty() ? "" : "; ", in.cfg.workers, in.cores);
      if (others.empty() && !in.ours && in.ix.decoders_fill_cores())  // the program's own threads take the cores, nothing else
        why += fmt::format(" — more workers would make it worse: its {} decoding thread{} + the loop already fill the {} usable cores; make "
                           "each sample cheaper or give the job more cores",
                           in.ix.decode_threads, in.ix.decode_threads == 1 ? "" : "s", in.ix.cores);
      else
        why += fmt::format(" — more workers would make it worse: give the pipeline the CPU it is denied ({})",
                           others.empty() ? "find what else runs on the host" : others);
    } else if (full) {
      why = fmt::format("{} workers + the consumer already fill the {} usable cores — more workers cannot run; cheaper decode is what helps",
                        in.cfg.workers, in.cores);
    } else {
      why = fmt::format("its {} decoding thread{} + the loop{} already fill the {} usable cores — more workers cannot run; make each "
                        "sample cheaper or give the job more cores",
                        in.ix.decode_threads, in.ix.decode_threads == 1 ? "" : "s",
                        in.ix.loop_cpu >= 0 ? fmt::format(" (on a CPU {:.0f}% of its time)", 100 * in.ix.loop_cpu) : "", in.ix.cores);
    }
    in.say(Advice::oversubscribed, fmt::format("decoding: {:.0f} ms of stall; {}", in.stall(StallClass::decoding), why));
  } else {
    // By how much: the what-if model at the most workers that still leave the consumer a core.
    std::string expect;
    if (in.ours && in.cores > 1) {
      const StageCosts costs = stage_costs(in.t, in.ix, in.rep);
      const int target = std::max(in.cfg.workers + 1, std::min(in.cores - 1, 2 * in.cfg.workers));
      if (costs.valid) {
        const Prediction now = predict(costs, in.cfg.workers), then = predict(costs, target);
        expect = fmt::format("; predicted {:.0f} → {:.0f} img/s at {} workers (bound by {})", now.images_per_second,
                             then.images_per_second, target, then.bound);
      }
    }
    if (!in.ours && (in.ix.decoders_unseen || in.ix.loop_decodes)) {
      in.say(Advice::more_workers, fmt::format("decoding: {:.0f} ms of stall; {}", in.stall(StallClass::decoding),
                                               in.ix.decoders_unseen ? in.ix.unseen_decoders_why() : TraceIndex::kLoopDecodesWhy));
      return;
    }
    // A loop that advances several loaders each step: whose workers.
    std::string which;
    if (!in.ours) {
      const LoaderWaits lw = find_loader_waits(in.ix, in.rep, in.startup.count);
      if (const int d = lw.dominant(kDominantLoaderShare); d >= 0) {
        static constexpr const char* kPlaces[] = {"first", "second", "third", "fourth"};
        which = fmt::format(" for the {} of the {} DataLoaders the loop advances every step ({:.0f}% of its waits were for that one's "
                            "batches): its num_workers",
                            d < 4 ? std::string(kPlaces[d]) : fmt::format("number {}", d + 1), lw.loaders,
                            100 * lw.share(d));
      }
    }
    in.say(Advice::more_workers, fmt::format("decoding: {:.0f} ms of stall on CPU-bound decode — more workers{}{}{}", in.stall(StallClass::decoding),
                                          which,
                                          in.ours ? fmt::format(" (now {}, {} usable cores)", in.cfg.workers, in.cores > 0 ? std::to_string(in.cores) : "?") : "",
                                          expect));
  }
  if (in.recorded.known<&RunConfig::dct_scaling>() && !in.cfg.dct_scaling) in.say(Advice::enable_dct_scaling, "decoding: enable DCT-scaled decode (--dct-scaling true)");
  if (in.recorded.known<&RunConfig::roi_decode>() && !in.cfg.roi_decode) in.say(Advice::enable_roi_decode, "decoding: enable region-of-interest decode (--roi-decode true)");
  if (in.recorded.known<&RunConfig::output>() && in.cfg.output != OutputFormat::uint8_nhwc)
    in.say(Advice::uint8_output, "decoding: uint8 output with normalization on the device (--output uint8) cuts the host's per-pixel work");
}

void advise_submission(const AdviceInputs& in) {
  if (in.share(StallClass::submission) < 0.3) return;
  const double sub = in.stall(StallClass::submission);
  const auto big = [&](Cause c) { return sub > 0 && in.cause(c) >= 0.2 * sub; };
  if (big(Cause::pageable_copy) && !(in.recorded.known<&RunConfig::memory>() && in.cfg.memory == MemoryKind::pinned && !in.cfg.pin_per_batch))
    in.say(Advice::pinned_memory, fmt::format("submission: {:.0f} ms in pageable copies — allocate batch buffers pinned once{}", in.cause(Cause::pageable_copy),
                                           in.recorded.known<&RunConfig::memory>() ? " (--memory pinned)" : " (cudaHostAlloc, or pin_memory=True)"));
  if (big(Cause::per_sample_copies) && !(in.recorded.known<&RunConfig::copy>() && in.cfg.copy == CopyStyle::batch))
    in.say(Advice::batch_copies, fmt::format("submission: {:.0f} ms in per-sample copies — one cudaMemcpyAsync per batch{}", in.cause(Cause::per_sample_copies),
                                          in.recorded.known<&RunConfig::copy>() ? " (--copy batch)" : ""));
  if (big(Cause::host_allocation) && !(in.recorded.known<&RunConfig::pin_per_batch>() && in.recorded.known<&RunConfig::memory>() && !in.cfg.pin_per_batch && in.cfg.memory == MemoryKind::pinned))
    in.say(Advice::pin_once, fmt::format("submission: {:.0f} ms pinning/allocating inside the step — pin the buffers once, up front{}",
                                      in.cause(Cause::host_allocation), in.recorded.known<&RunConfig::pin_per_batch>() && in.cfg.pin_per_batch ? " (drop --pin-per-batch)" : ""));
  if (big(Cause::synchronization) && !(in.recorded.known<&RunConfig::sync_every_step>() && !in.cfg.sync_every_step))
    in.say(Advice::drop_step_sync, fmt::format("submission: {:.0f} ms synchronizing inside the step — drop the per-step sync and let the in-flight "
                                            "limit pace the loop{}", in.cause(Cause::synchronization), in.recorded.known<&RunConfig::sync_every_step>() ? " (drop --sync-every-step)" : ""));
  if (big(Cause::launch_rate))
    in.say(Advice::launch_rate,
        fmt::format("submission: {:.0f} ms waiting on kernel launches ({:.0f} launches a step, one every {:.1f} µs of host time — {:.1f} µs "
                    "inside each call — while kernels ran {:.1f} µs on the device) — capture the step in a CUDA Graph, fuse into fewer, larger "
                    "kernels{}, give the launching thread a core of its own{}",
                    in.cause(Cause::launch_rate), in.sum.launches_per_step, in.sum.host_us_between_launches, in.sum.host_us_per_launch,
                    in.sum.device_us_per_kernel,
                    in.recorded.known<&RunConfig::step_kernels>() ? fmt::format(" (--step-kernels {} now)", in.cfg.step_kernels) : "",
                    in.ours && in.cores > 0 && in.cfg.workers + 1 >= in.cores ? fmt::format(" (workers {} + consumer fill the {} cores)", in.cfg.workers, in.cores) : ""));
  if (big(Cause::host_paced))
    in.say(Advice::host_paced,
        fmt::format("submission: {:.0f} ms with the device idle until the loop launched its next work (host-paced, outside any wait "
                    "for input) — the loop's CPU work between kernels sets the pace: find it (torch.profiler, py-spy), capture the step "
                    "(CUDA Graphs, torch.compile) or move that work out of the step",
                    in.cause(Cause::host_paced)));
  if (in.cause(Cause::consumer_starved) >= 0.2 * in.stall(StallClass::submission)) {
    const std::string others = in.competition();
    in.say(Advice::consumer_starved,
        fmt::format("submission: {:.0f} ms with the submitting thread runnable but not running — the host is oversubscribed: give that "
                    "thread a core of its own, fewer loader threads than cores{}",
                    in.cause(Cause::consumer_starved), others.empty() ? "" : " (" + others + ")"));
  }
}

void advise_unattributed(const AdviceInputs& in) {
  if (in.share(StallClass::unattributed) < 0.3) return;
  if (in.cause(Cause::input_unsplit) >= 0.5 * in.stall(StallClass::unattributed))
    in.say(Advice::split_wait, fmt::format("{:.0f} ms waiting for batches whose producers left no records: the wait cannot be split into "
                                        "retrieval and decoding — annotate the workers' read and decode", in.cause(Cause::input_unsplit)));
  else if (in.cause(Cause::before_batch_copy) >= 0.5 * in.stall(StallClass::unattributed))
    in.say(Advice::add_ranges,
           fmt::format("{:.0f} ms with the device idle and no CUDA call until the loop copied its next batch, with no record of what it "
                       "did there: most likely getting that batch (its loader, a queue, decoding in the loop) — put a range around the "
                       "fetch (nvtxRangePush(\"data\") ... nvtxRangePop; a Python program is recorded with the hook on unless "
                       "--no-python-hook) to split it into retrieval and decoding",
                       in.cause(Cause::before_batch_copy)));
  else
    in.say(Advice::add_ranges, fmt::format("{:.0f} ms of stall happened outside any wait/submit range: add ranges there before concluding",
                                        in.stall(StallClass::unattributed)));
}

}  // namespace stalldx::diagnose
