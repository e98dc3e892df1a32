// Per-step verdicts: windows on the device's busy timeline, idle time attributed to what the consumer
// thread was doing (innermost range), wait time split by the producers' work on the awaited batch.
#include "stalldx/diagnose/diagnosis.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "call_cause.h"
#include "coverage.h"
#include "trace_doubts.h"
#include "copy_evidence.h"
#include "stalldx/record/part_format.h"
#include "stalldx/record/step_inference.h"
#include "input_split.h"
#include "next_question.h"
#include "sampled_steps.h"
#include "step_work.h"
#include "summaries.h"
#include "trace_index.h"
#include "window_edges.h"

namespace stalldx::diagnose {

namespace {

struct StepAccumulator {
  std::array<double, kClassCount> cls{};
  std::map<std::pair<Cause, std::string>, double> causes;  // (cause, what) -> idle ms
  std::vector<std::string> records;
  const HostRange* holds_both = nullptr;    // a range that covered idle time and also submitted a copy
  InputSplit last_split;
  bool any_split = false;
  int copies_in_step = 0;
  int launches_in_step = 0;
  std::unordered_map<std::int32_t, std::int64_t> runq_used_ns;  // consumer range -> own run-queue delay already attributed
  void add(Cause c, const std::string& what, double ms_idle) {
    cls[static_cast<int>(cause_class(c))] += ms_idle;
    causes[{c, what}] += ms_idle;
    if (unsplit_input(c)) unsplit_ms += ms_idle;
  }
  double unsplit_ms = 0;  // waits on a batch whose producers left no records
};

// A wait for a batch, split by the producers' work on it. Where run-queue delay was sampled, the share of
// the producers' wall time spent runnable but not running is the host's CPU denied to them (decoding
// class: the CPU is the limit), whether they were reading or decoding; the rest of a read is waiting on
// storage when it ran little of the time it was not queued. Without it, cpu/wall thresholds decide.
void attribute_input(const Thresholds& th, const InputSplit& s, const std::string& what, double d, StepAccumulator& acc) {
  const auto add = [&](Cause c, double v) {
    if (v > 0) acc.add(c, what, v);
  };
  const double read = d * s.retrieval_fraction, decode = d - read;
  if (s.read_runq_ratio >= 0) {
    const double q = s.read_runq_ratio;
    const double running = q < 1 ? std::max(0.0, s.read_cpu_ratio) / (1 - q) : 1;  // cpu share of the unqueued time
    add(Cause::read_starved, read * q);
    add(s.read_cpu_ratio >= 0 && running < th.waiting_cpu_ratio ? Cause::storage_wait : Cause::storage_read, read * (1 - q));
  } else {
    const bool waiting = s.read_cpu_ratio >= 0 && s.read_cpu_ratio < th.waiting_cpu_ratio;
    add(waiting ? Cause::storage_wait : Cause::storage_read, read);
  }
  if (s.decode_runq_ratio >= 0) {
    add(Cause::decode_starved, decode * s.decode_runq_ratio);
    add(Cause::decode_cpu_bound, decode * (1 - s.decode_runq_ratio));
  } else {
    const bool starved = s.decode_cpu_ratio >= 0 && s.decode_cpu_ratio < th.contention_cpu_ratio;
    add(starved ? Cause::decode_starved : Cause::decode_cpu_bound, decode);
  }
}

// `host_only`: no device records, the window is the step itself (the consumer's own work is no stall).
void attribute(const TraceIndex& ix, Interval gap, std::size_t& seg_cursor, StepAccumulator& acc, bool host_only) {
  // Idle the consumer spent outside any wait or CUDA call, where the device's next work was launched by
  // the consumer after the device went idle: the host set the pace (launch rate), whatever the ranges.
  // In a step of many launches the device also idles between kernels it already had queued (each
  // launch's fixed latency): kernels too small for their launch cost — launch rate as well.
  const bool many = acc.launches_in_step >= ix.thresholds.launch_bound_launches;
  const bool paced = !host_only && (many || ix.host_paced(gap));
  const Cause pacing = many ? Cause::launch_rate : Cause::host_paced;
  // Steps inferred from the batch copies, no range anywhere: the idle before the next batch's copy is the
  // loop getting that batch (its loader, a queue, its own decoding) — input, not launch rate.
  const bool before_batch = !host_only && ix.before_batch_copy(gap);
  const auto outside = [&](Cause plain, const std::string& what, double d) {
    if (before_batch) acc.add(Cause::before_batch_copy, "", d);
    else acc.add(paced ? pacing : plain, what, d);
  };
  const auto& segs = ix.segments;
  while (seg_cursor < segs.size() && segs[seg_cursor].end <= gap.begin) ++seg_cursor;
  std::int64_t t = gap.begin;
  const auto nranges = static_cast<std::int32_t>(ix.consumer_ranges.size());
  for (std::size_t i = seg_cursor; i < segs.size() && segs[i].begin < gap.end; ++i) {
    const std::int64_t b = std::max(segs[i].begin, gap.begin), e = std::min(segs[i].end, gap.end);
    if (b > t) outside(Cause::outside_ranges, "", ms(b - t));
    t = std::max(t, e);
    const double d = ms(e - b);
    if (d <= 0) continue;
    const std::int32_t owner = segs[i].owner;
    if (owner >= nranges) {
      const RuntimeCall& c = *ix.consumer_calls[static_cast<std::size_t>(owner - nranges)];
      acc.add(call_cause(ix, c, acc.copies_in_step), ix.trace.name(c.name), d);
      if (acc.records.size() < 6) acc.records.push_back(fmt::format("{} correlation {}", ix.trace.name(c.name), c.correlation));
      continue;
    }
    const HostRange& r = *ix.consumer_ranges[static_cast<std::size_t>(owner)];
    switch (r.role) {
      case Role::wait_batch: {
        const InputSplit s = split_wait(ix, r);
        if (!s.known) {
          acc.add(Cause::input_unsplit, record::batch_label(r.batch), d);
          break;
        }
        attribute_input(ix.thresholds, s, record::batch_label(r.batch), d, acc);
        acc.last_split = s;
        acc.any_split = true;
        if (acc.records.size() < 6)
          acc.records.push_back(fmt::format("wait_batch step {} batch {} at {:.3f} ms", r.step, r.batch,
                                            ms(r.begin_ns - ix.trace.meta.origin_ns)));
        break;
      }
      case Role::submit:
        // Between launch calls of a step that launches many kernels: the host's own per-launch work.
        acc.add(acc.launches_in_step >= ix.thresholds.launch_bound_launches ? Cause::launch_rate : Cause::submit_work,
                ix.trace.name(r.name), d);
        break;
      case Role::sync:
        acc.add(Cause::synchronization, ix.trace.name(r.name), d);
        break;
      // The consumer producing its own batch (num_workers=0): its reads and decodes are the stall.
      case Role::retrieval:
        acc.add(r.cpu_ns >= 0 && r.end_ns > r.begin_ns &&
                        static_cast<double>(r.cpu_ns) / static_cast<double>(r.end_ns - r.begin_ns) < ix.thresholds.waiting_cpu_ratio
                    ? Cause::storage_wait
                    : Cause::storage_read,
                ix.trace.name(r.name), d);
        break;
      case Role::decode:
      case Role::collate:
        acc.add(Cause::decode_cpu_bound, ix.trace.name(r.name), d);
        break;
      default: {
        // Idle inside a range of no stall role, outside its children: as much of it as the range's own
        // run-queue delay covers (not yet claimed by an earlier gap) is the consumer waiting for a CPU.
        double starved = 0;
        if (const std::int64_t own = ix.consumer_own_runq_ns[static_cast<std::size_t>(owner)]; own > 0) {
          std::int64_t& used = acc.runq_used_ns[owner];
          starved = std::min(d, ms(own - used));
          used += static_cast<std::int64_t>(starved * 1e6);
          if (starved > 0) acc.add(Cause::consumer_starved, ix.trace.name(r.name), starved);
        }
        if (d > starved) {
          const std::string what = fmt::format("'{}' ({})", ix.trace.name(r.name), role_name(r.role));
          // Inside the step's forward/backward/optimizer with the device idle: the host issuing work.
          // Inside the step itself (no range of its own around that code): host-paced or unattributed. A
          // range of unknown meaning (a user range, the seed's data_load) stays unattributed: it may hold
          // anything, the input included.
          if (r.role == Role::compute && !host_only) acc.add(pacing, what, d - starved);
          else if (r.role == Role::step) outside(Cause::unmapped_range, what, d - starved);
          else acc.add(Cause::unmapped_range, what, d - starved);
        }
        if (r.role != Role::step && !acc.holds_both && submits_copy(ix, r)) acc.holds_both = &r;
        break;
      }
    }
  }
  if (t < gap.end) outside(Cause::outside_ranges, "", ms(gap.end - t));
}

void decide(const TraceIndex& ix, const Thresholds& th, const Coverage& cov, StepAccumulator& acc, StepDiagnosis& sd) {
  sd.class_ms = acc.cls;
  const double limit = th.device_bound_limit(sd.window_ms);
  std::array<int, kClassCount> order{0, 1, 2, 3};
  std::sort(order.begin(), order.end(), [&](int a, int b) { return acc.cls[a] > acc.cls[b]; });
  sd.top = static_cast<StallClass>(order[0]);
  sd.second = static_cast<StallClass>(order[1]);
  const double share = sd.stall_ms > 0 ? acc.cls[order[0]] / sd.stall_ms : 0;
  if (sd.stall_ms <= limit) sd.verdict = Verdict::device_bound;
  else if (share >= th.dominant_share && sd.top != StallClass::unattributed) sd.verdict = static_cast<Verdict>(order[0]);
  else if (acc.unsplit_ms >= th.dominant_share * sd.stall_ms) sd.verdict = Verdict::input;  // waited on an unrecorded loader
  else if (share >= th.dominant_share) sd.verdict = Verdict::unattributed;
  else sd.verdict = Verdict::mixed;

  // Typed causes, merged over their `what`, largest first; the text lines keep the record names.
  std::map<Cause, CauseShare> merged;
  std::vector<std::pair<double, std::string>> causes;
  for (auto& [k, v] : acc.causes) {
    CauseShare& m = merged[k.first];
    m.cause = k.first;
    m.ms += v;
    if (m.what.empty()) m.what = k.second;
    causes.emplace_back(v, k.second.empty() ? cause_name(k.first) : fmt::format("{} ({})", cause_name(k.first), k.second));
  }
  for (auto& [c, share] : merged) sd.causes.push_back(share);
  std::sort(sd.causes.begin(), sd.causes.end(), [](const CauseShare& a, const CauseShare& b) { return a.ms > b.ms; });
  std::sort(causes.rbegin(), causes.rend());
  for (auto& [v, k] : causes) sd.details.push_back(fmt::format("{:.3f} ms idle: {}", v, k));
  for (auto& r : acc.records) sd.details.push_back("record: " + r);

  std::string split;
  if (acc.any_split) {
    const InputSplit& s = acc.last_split;
    const auto ratios = [](double cpu, double runq) {
      if (cpu < 0) return std::string();
      return runq >= 0 ? fmt::format(" (cpu/wall {:.2f}, queued {:.2f})", cpu, runq) : fmt::format(" (cpu/wall {:.2f})", cpu);
    };
    split = fmt::format("; producers on the batch: reads {:.1f} ms{}, decodes {:.1f} ms{}", s.read_ms,
                        ratios(s.read_cpu_ratio, s.read_runq_ratio), s.decode_ms, ratios(s.decode_cpu_ratio, s.decode_runq_ratio));
  }
  if (sd.verdict == Verdict::device_bound) {
    sd.evidence = fmt::format("stall {:.2f} ms <= {:.2f} ms threshold: busy {:.2f} of {:.2f} ms, work was queued in time",
                              sd.stall_ms, limit, sd.busy_ms, sd.window_ms);
  } else {
    const std::string top_cause =
        causes.empty() ? std::string()
                       : fmt::format(": {} {:.0f}%", causes[0].second, 100 * causes[0].first / std::max(sd.stall_ms, 1e-9));
    sd.evidence = fmt::format("stall {:.2f} of {:.2f} ms{}{}", sd.stall_ms, sd.window_ms, top_cause, split);
  }
  sd.next_question = next_question(sd, ix, th, cov, acc.any_split ? &acc.last_split : nullptr,
                                   causes.empty() ? std::string_view() : std::string_view(causes[0].second));
}

// Host records only (no device records at all, or a sampled recording's step outside its windows): only
// the consumer's waits count as stall; the rest of the step is its own work. Between windows only its waits
// for input: its CUDA calls and launches say nothing without the device's timeline (that side is carried
// from the nearest window).
void keep_consumer_waits(StepAccumulator& acc, bool between_windows) {
  for (auto it = acc.causes.begin(); it != acc.causes.end();) {
    const Cause c = it->first.first;
    const bool input = cause_class(c) == StallClass::retrieval || cause_class(c) == StallClass::decoding || unsplit_input(c);
    it = c == Cause::outside_ranges || c == Cause::unmapped_range || (between_windows && !input) ? acc.causes.erase(it) : std::next(it);
  }
  acc.cls = {};
  for (const auto& [k, v] : acc.causes) acc.cls[static_cast<int>(cause_class(k.first))] += v;
}

// The steps in order, each judged on its window: on the device's timeline, from the previous step's last
// device work to its own (the idle gaps in it are the stall); with host records only, the step's own span.
// Cursors move forward only: steps are visited in order, once.
class StepJudge {
 public:
  StepJudge(const Trace& t, const TraceIndex& ix, const Thresholds& th, const Coverage& cov, const StepWork& work,
            const DeviceWindows& windows)
      : t_(t), ix_(ix), th_(th), cov_(cov), work_(work), windows_(windows), prev_(ix.steps.empty() ? 0 : ix.steps.front()->begin_ns),
        edges_(t, ix, work, windows) {}

  // `previous`: the step judged just before (null for the first).
  StepDiagnosis judge(const HostRange& sr, const StepDiagnosis* previous) {
    StepDiagnosis sd;
    sd.step = sr.step;
    sd.warmup = sr.step < ix_.warmup;
    StepAccumulator acc;
    acc.copies_in_step = sd.copies = copies_in(t_, work_, sr.step);
    sd.launch = launch_stats(t_, ix_, work_, sr.step);
    acc.launches_in_step = sd.launch.launches;
    const bool on_device = previous != nullptr && previous->basis == StepBasis::device;
    const bool host_only = !cov_.device_records || !edges_.on_device_timeline(sr, on_device, prev_, sd);
    if (cov_.device_records && host_only) sd.basis = StepBasis::host_records;
    idle_.clear();
    const Interval window = host_only ? host_window(sr) : device_window(sr, previous, sd);
    sd.window_begin_ms = ms(window.begin - t_.meta.origin_ns);
    sd.window_end_ms = ms(window.end - t_.meta.origin_ns);
    sd.window_ms = ms(window.end - window.begin);
    for (const Interval& g : idle_) attribute(ix_, g, seg_cursor_, acc, host_only);
    if (host_only) {
      keep_consumer_waits(acc, cov_.device_records);
      if (!cov_.device_records) seg_cursor_ = 0;
    }
    sd.stall_ms = acc.cls[0] + acc.cls[1] + acc.cls[2] + acc.cls[3];
    decide(ix_, th_, cov_, acc, sd);
    if (acc.holds_both) {
      const HostRange& r = *acc.holds_both;
      sd.next_question = fmt::format(
          "split batch retrieval from transfer submission: range '{}' ({:.3f}–{:.3f} ms) both covers the idle time and submitted the H2D copy",
          t_.name(r.name), ms(r.begin_ns - t_.meta.origin_ns), ms(r.end_ns - t_.meta.origin_ns));
    }
    if (!cov_.device_records) {
      // No device: "device-bound" by its waits alone says only that the loop's own work took the step.
      if (sd.verdict == Verdict::device_bound) {
        sd.evidence = fmt::format("waited {:.2f} of {:.2f} ms on its input: the loop's own work took the rest", sd.stall_ms, sd.window_ms);
        sd.next_question =
            "the loop waited little on its input: its own work (forward, backward, optimizer, or the host side of a GPU step) took the "
            "step; record device activity (CUPTI) to tell whether the GPU is the limit";
      }
      sd.verdict = Verdict::no_device_records;
    }
    if (const auto& acts = work_.of(sd.step); !acts.empty()) {
      describe_copies(ix_, acts, sd);
      std::vector<Interval> own;
      own.reserve(acts.size());
      for (const std::size_t i : acts) own.push_back({t_.activities[i].begin_ns, t_.activities[i].end_ns});
      for (const Interval& v : merge_union(std::move(own))) sd.work_ms += ms(v.end - v.begin);
    }
    return sd;
  }

 private:
  // What the consumer waited on inside its step.
  Interval host_window(const HostRange& sr) {
    const Interval w{sr.begin_ns, sr.end_ns};
    idle_.push_back(w);
    return w;
  }
  Interval device_window(const HostRange& sr, const StepDiagnosis* previous, StepDiagnosis& sd) {
    if (windows_.sampled() && (previous == nullptr || previous->basis != StepBasis::device))
      prev_ = std::max(sr.begin_ns, edges_.known_from());  // the window's first step judged on the device
    const auto it = work_.end_ns.find(sr.step);
    const std::int64_t end = it == work_.end_ns.end() ? prev_ : std::max(prev_, it->second);
    if (it == work_.end_ns.end()) sd.details.push_back("no device work recorded for this step: its idle time moves to the next step");
    const Interval w{prev_, end};
    sd.device_records = work_.of(sr.step).size();
    gaps(ix_.busy, w, gap_cursor_, idle_);
    sd.busy_ms = ms(covered(ix_.busy, w, busy_cursor_));
    prev_ = end;
    return w;
  }

  const Trace& t_;
  const TraceIndex& ix_;
  const Thresholds& th_;
  const Coverage& cov_;
  const StepWork& work_;
  const DeviceWindows& windows_;
  std::int64_t prev_;  // where the next step's device window begins
  WindowEdges edges_;  // a sampled recording's windows: which steps their device timeline can judge
  std::size_t busy_cursor_ = 0, gap_cursor_ = 0, seg_cursor_ = 0;
  std::vector<Interval> idle_;  // this step's idle gaps
};

}  // namespace

Report diagnose(const Trace& input, const Thresholds& th) {
  Report rep;
  // Untrusted input: absurd and repeated events are set aside first (counted below).
  TraceDoubts doubts;
  Trace cleaned;
  const Trace& t = check_trace(input, doubts, cleaned) ? cleaned : input;
  TraceIndex ix(t, th);
  rep.device = t.meta.device;
  const StepWork work = index_step_work(t, ix);
  rep.coverage = recorded_coverage(t, ix);
  rep.coverage.unmatched_device = work.unmatched;
  judge_coverage(t, ix, doubts, rep.coverage);
  const DeviceWindows windows(t, rep.coverage.device_records);
  StepJudge judge(t, ix, th, rep.coverage, work, windows);
  for (const HostRange* sr : ix.steps) rep.steps.push_back(judge.judge(*sr, rep.steps.empty() ? nullptr : &rep.steps.back()));
  carry_from_windows(windows, th, rep);
  build_summaries(t, ix, rep);
  build_run_summary(t, ix, th, rep);
  return rep;
}

}  // namespace stalldx::diagnose
