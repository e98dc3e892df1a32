#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <map>

#include "input_split.h"
#include "stalldx/record/merge.h"
#include "stalldx/record/step_inference.h"

namespace stalldx::diagnose {

namespace {
// A loader's work on a batch: reading it, decoding + transforming it, assembling it (collate, pinning).
bool is_producer(Role r) { return r == Role::retrieval || r == Role::decode || r == Role::collate; }

// own[i] = ranges[i]'s run-queue delay minus that of the sampled ranges directly nested in it (one
// thread's ranges nest; a partial overlap is treated as not nested). -1 where the range was not sampled.
void own_runq(const std::vector<const HostRange*>& ranges, std::vector<std::int64_t>& own) {
  own.assign(ranges.size(), -1);
  std::vector<std::size_t> order(ranges.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
    own[i] = ranges[i]->runq_ns;
  }
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return ranges[a]->begin_ns != ranges[b]->begin_ns ? ranges[a]->begin_ns < ranges[b]->begin_ns : ranges[a]->end_ns > ranges[b]->end_ns;
  });
  std::vector<std::size_t> open;
  for (std::size_t i : order) {
    while (!open.empty() && ranges[open.back()]->end_ns <= ranges[i]->begin_ns) open.pop_back();
    if (!open.empty() && ranges[i]->end_ns <= ranges[open.back()]->end_ns) {
      std::int64_t& parent = own[open.back()];
      if (parent >= 0 && ranges[i]->runq_ns > 0) parent = std::max<std::int64_t>(0, parent - ranges[i]->runq_ns);
    }
    open.push_back(i);
  }
}
}  // namespace

TraceIndex::TraceIndex(const Trace& t, const Thresholds& th) : trace(t), thresholds(th), recorded(recorded_config(t)) {
  // Consumer = the thread that owns most step ranges.
  std::map<std::uint32_t, int> step_threads;
  for (const HostRange& r : t.ranges)
    if (r.role == Role::step) step_threads[r.thread]++;
  int best = -1;
  for (auto& [thread, n] : step_threads)
    if (n > best) { best = n; consumer = thread; }
  std::map<std::int64_t, const HostRange*> by_step;
  for (const HostRange& r : t.ranges) {
    if (r.thread == consumer && !step_threads.empty()) {
      consumer_ranges.push_back(&r);
      if (r.role == Role::step && r.step >= 0) by_step.emplace(r.step, &r);
    } else if (is_producer(r.role) && r.batch >= 0) {
      producer_by_batch[r.batch].push_back(&r);
    } else if (is_producer(r.role)) {
      unbatched_producers.push_back(&r);
      unbatched_longest_ns = std::max(unbatched_longest_ns, r.end_ns - r.begin_ns);
    }
  }
  // Each decoding thread's span, first decode to last; at most how many of them overlap (a DataLoader's
  // workers of one epoch, not every epoch's: they are new processes each epoch).
  std::map<std::uint32_t, std::pair<std::int64_t, std::int64_t>> decoders;
  std::map<std::uint32_t, std::vector<const HostRange*>> work_by_thread;  // every producer range of those threads
  for (const HostRange& r : t.ranges)
    if (r.role == Role::decode && r.thread != consumer) {
      auto [it, fresh] = decoders.try_emplace(r.thread, r.begin_ns, r.end_ns);
      if (!fresh) it->second = {std::min(it->second.first, r.begin_ns), std::max(it->second.second, r.end_ns)};
    }
  for (const HostRange& r : t.ranges)
    if (is_producer(r.role) && decoders.count(r.thread) > 0) work_by_thread[r.thread].push_back(&r);
  std::vector<std::pair<std::int64_t, int>> edges;  // (time, +1 begin / -1 end); ends first at a tie
  for (const auto& [thread, span] : decoders) {
    edges.emplace_back(span.first, 1);
    edges.emplace_back(span.second, -1);
  }
  std::sort(edges.begin(), edges.end());
  std::int64_t spanned_ns = 0, opened_at = 0;
  for (int open = 0; const auto& [at, d] : edges) {
    if (open == 0 && d > 0) opened_at = at;
    decode_threads = std::max(decode_threads, open += d);
    if (open == 0) spanned_ns += at - opened_at;
  }
  // Their demand: each thread's outermost producer ranges — reads, decodes, collation (one nested in
  // another counted once).
  std::int64_t demand_ns = 0;
  for (auto& [thread, rs] : work_by_thread) {
    std::sort(rs.begin(), rs.end(), [](const HostRange* a, const HostRange* b) { return a->begin_ns < b->begin_ns; });
    std::int64_t covered = INT64_MIN;
    for (const HostRange* r : rs) {
      if (r->end_ns <= covered) continue;
      covered = r->end_ns;
      demand_ns += r->cpu_ns >= 0 ? r->cpu_ns + std::max<std::int64_t>(0, r->runq_ns) : r->end_ns - r->begin_ns;
    }
  }
  if (spanned_ns > 0) decode_cores = static_cast<double>(demand_ns) / static_cast<double>(spanned_ns);
  if (decode_threads == 0) {
    std::int64_t cpu_ns = 0, wall_ns = 0;
    for (const HostRange& r : t.ranges)
      if (r.role == Role::decode && r.thread == consumer && r.cpu_ns >= 0) {
        cpu_ns += r.cpu_ns;
        wall_ns += r.end_ns - r.begin_ns;
      }
    decoders_unseen = wall_ns > 0 && static_cast<double>(cpu_ns) < th.contention_cpu_ratio * static_cast<double>(wall_ns);
    loop_decodes = wall_ns > 0 && !decoders_unseen;
  }
  cores = t.meta.host_facts.cores();
  std::int64_t step_cpu_ns = 0, step_wall_ns = 0;
  for (const auto& [s, r] : by_step)
    if (r->cpu_ns >= 0 && r->end_ns > r->begin_ns) {
      step_cpu_ns += r->cpu_ns;
      step_wall_ns += r->end_ns - r->begin_ns;
    }
  if (step_wall_ns > 0) loop_cpu = std::min(1.0, static_cast<double>(step_cpu_ns) / static_cast<double>(step_wall_ns));
  std::sort(unbatched_producers.begin(), unbatched_producers.end(),
            [](const HostRange* a, const HostRange* b) { return a->begin_ns < b->begin_ns; });
  for (auto& [s, r] : by_step) steps.push_back(r);
  api_kind_by_name.reserve(t.names.size());
  for (std::uint32_t id = 0; id < t.names.size(); ++id) api_kind_by_name.push_back(api_kind(t.name(id)));
  for (const RuntimeCall& c : t.calls)
    if (c.thread == consumer) {
      consumer_calls.push_back(&c);
      call_by_corr.emplace(c.correlation, &c);
      if (kind(c) == ApiKind::launch && c.step >= 0) {
        Launches& l = launches_by_step[c.step];
        l.count++;
        l.host_ns += c.end_ns - c.begin_ns;
        l.first_ns = std::min(l.first_ns, c.begin_ns);
        l.last_ns = std::max(l.last_ns, c.end_ns);
      }
    }

  own_runq(consumer_ranges, consumer_own_runq_ns);

  // Over the same span the more specific record is the inner one: a step holds a wait, a wait the
  // consumer's own reads and decodes of that batch (num_workers=0: the Python hook times both by one
  // clock read), any range a CUDA call.
  const auto nesting = [](Role r) {
    switch (r) {
      case Role::step: return 0;
      case Role::retrieval: case Role::decode: case Role::collate: return 2;
      default: return 1;
    }
  };
  std::vector<Interval> owners;
  std::vector<int> depth;
  owners.reserve(consumer_ranges.size() + consumer_calls.size());
  depth.reserve(owners.capacity());
  for (const HostRange* r : consumer_ranges) {
    owners.push_back({r->begin_ns, r->end_ns});
    depth.push_back(nesting(r->role));
  }
  for (const RuntimeCall* c : consumer_calls) {
    owners.push_back({c->begin_ns, c->end_ns});
    depth.push_back(3);
  }
  segments = innermost_segments(owners, depth);

  std::unordered_map<std::uint64_t, std::int64_t> call_step;
  for (const RuntimeCall& c : t.calls)
    if (c.step >= 0) call_step.emplace(c.correlation, c.step);
  activity_step.resize(t.activities.size(), -1);
  std::vector<Interval> work;
  for (std::size_t i = 0; i < t.activities.size(); ++i) {
    const DeviceActivity& a = t.activities[i];
    if (a.device < 0) standin = true;
    if (!is_device_work(a.kind)) continue;
    // A pageable copy is paced by the host staging it through a driver buffer, not by the device: its
    // time is not busy time, so it shows up as idle and is attributed to the call that staged it.
    if (!(is_memcpy(a.kind) && a.host_mem == MemKind::pageable)) work.push_back({a.begin_ns, a.end_ns});
    std::int64_t s = a.step;
    if (s < 0 && a.correlation != 0) {
      auto it = call_step.find(a.correlation);
      if (it != call_step.end()) s = it->second;
    }
    activity_step[i] = s;
    if (a.correlation != 0) {
      activities_by_corr[a.correlation].push_back(i);
      work_begins.emplace_back(a.begin_ns, a.correlation);
    }
  }
  busy = merge_union(std::move(work));
  std::sort(work_begins.begin(), work_begins.end());
  standin = standin || t.meta.standin;

  warmup = warmup_steps(t, th);
  std::int64_t denied_cpu_ns = 0, denied_runq_ns = 0;  // steady steps: start-up (workers forking, imports) aside
  for (const HostRange* r : steps)
    if (r->step >= warmup && r->cpu_ns >= 0 && r->runq_ns >= 0) {
      denied_cpu_ns += r->cpu_ns;
      denied_runq_ns += r->runq_ns;
    }
  if (denied_cpu_ns + denied_runq_ns > 0)
    loop_denied = static_cast<double>(denied_runq_ns) / static_cast<double>(denied_cpu_ns + denied_runq_ns);
  if (auto it = t.meta.config.find(record::kStepsBatchCopyBytesKey); it != t.meta.config.end()) {
    const std::string& v = it->second;
    if (std::from_chars(v.data(), v.data() + v.size(), batch_copy_bytes).ec != std::errc()) batch_copy_bytes = 0;  // a forged value: ignored
  }
}

std::string TraceIndex::unseen_decoders_why() const {
  std::string host = cores > 0 ? fmt::format("{} usable core{}", cores, cores == 1 ? "" : "s") : std::string("the host's cores (not recorded)");
  if (loop_cpu >= 0) host += fmt::format(", the loop itself on a CPU {:.0f} % of its time", 100 * loop_cpu);
  return fmt::format("the loop blocked while threads or processes that left no records (a multiprocessing Pool or Process, a thread "
                     "pool) made its batches, so their number and CPU use are not known: more of them help only while the host has a "
                     "core free ({}) — if they already fill it (top, htop), make each sample cheaper instead",
                     host);
}

std::vector<std::uint64_t> TraceIndex::paced_work(Interval gap) const {
  std::vector<std::uint64_t> out;
  // The work beginning where the gap ends (within a microsecond: a busy interval's start is some record's).
  auto it = std::lower_bound(work_begins.begin(), work_begins.end(), std::make_pair(gap.end - 1'000, std::uint64_t{0}));
  for (; it != work_begins.end() && it->first <= gap.end + 1'000; ++it) {
    auto c = call_by_corr.find(it->second);
    if (c != call_by_corr.end() && c->second->begin_ns >= gap.begin) out.push_back(it->second);
  }
  return out;
}

bool TraceIndex::host_paced(Interval gap) const { return !paced_work(gap).empty(); }

bool TraceIndex::before_batch_copy(Interval gap) const {
  if (batch_copy_bytes == 0) return false;
  for (const std::uint64_t corr : paced_work(gap))
    if (auto acts = activities_by_corr.find(corr); acts != activities_by_corr.end())
      for (const std::size_t i : acts->second)
        if (trace.activities[i].kind == ActivityKind::memcpy_h2d && trace.activities[i].bytes == batch_copy_bytes) return true;
  return false;
}

RecordedConfig recorded_config(const Trace& t) {
  RecordedConfig rc;
  rc.present = from_meta(t.meta.config, rc.config, rc.problems);
  for (const RunField& f : run_fields())
    if (t.meta.config.count(std::string(f.name))) rc.recorded.emplace_back(f.name);
  return rc;
}

bool RecordedConfig::known(const RunField& field) const {
  return std::find(recorded.begin(), recorded.end(), field.name) != recorded.end();
}

int warmup_steps(const Trace& t, const Thresholds& th) {
  if (th.warmup_steps >= 0) return th.warmup_steps;
  if (t.meta.config.count(record::kHostRingKey)) return 0;  // the trace begins mid-run: its warm-up is long gone
  auto it = t.meta.config.find("warmup");
  if (it == t.meta.config.end()) return 0;
  RunConfig probe;
  if (!find_run_field("warmup")->assign(probe, it->second).is_ok()) return 0;
  return probe.warmup;
}

InputSplit split_wait(const TraceIndex& ix, const HostRange& w) {
  InputSplit s;
  const std::int64_t batch = w.batch >= 0 ? w.batch : w.step;
  auto it = ix.producer_by_batch.find(batch);
  std::vector<const HostRange*> overlapping;
  if (it == ix.producer_by_batch.end()) {
    // No producer names this batch: the producers that worked during the wait (any batch).
    const std::int64_t from = w.begin_ns - ix.unbatched_longest_ns;
    auto p = std::lower_bound(ix.unbatched_producers.begin(), ix.unbatched_producers.end(), from,
                              [](const HostRange* r, std::int64_t v) { return r->begin_ns < v; });
    for (; p != ix.unbatched_producers.end() && (*p)->begin_ns < w.end_ns; ++p)
      if ((*p)->end_ns > w.begin_ns) overlapping.push_back(*p);
    if (overlapping.empty()) return s;
  }
  const std::vector<const HostRange*>& producers = it == ix.producer_by_batch.end() ? overlapping : it->second;
  double r_ov = 0, d_ov = 0, r_tot = 0, d_tot = 0;
  double r_cpu = 0, r_wall = 0, d_cpu = 0, d_wall = 0;
  double r_q = 0, r_qwall = 0, d_q = 0, d_qwall = 0;
  for (const HostRange* p : producers) {
    const double ov = ms(std::max<std::int64_t>(0, std::min(p->end_ns, w.end_ns) - std::max(p->begin_ns, w.begin_ns)));
    const double wall = ms(p->end_ns - p->begin_ns);
    const bool read = p->role == Role::retrieval;
    (read ? r_ov : d_ov) += ov;
    (read ? r_tot : d_tot) += wall;
    if (p->cpu_ns >= 0) {
      (read ? r_cpu : d_cpu) += ms(p->cpu_ns);
      (read ? r_wall : d_wall) += wall;
    }
    if (p->runq_ns >= 0) {
      (read ? r_q : d_q) += ms(p->runq_ns);
      (read ? r_qwall : d_qwall) += wall;
    }
  }
  // The batch's own producers (named by their payload): the wait is split by the whole batch's work —
  // had its reads taken no time, it would have been ready that much earlier, whichever part of its work
  // happened to overlap the wait (a worker building a batch alone finishes with its last sample's decode,
  // so a short wait overlaps only decoding). Producers matched by time only: by what overlapped the wait.
  // Where several threads made the batch (samples in parallel), it was ready when the last of them
  // finished: that thread's own reads and decodes of the batch are what the wait waited on (one slow read
  // among many fast decodes is retrieval), not the whole batch's work summed over threads.
  const bool own_batch = it != ix.producer_by_batch.end();
  if (own_batch) {
    std::map<std::uint32_t, std::array<double, 2>> per_thread;  // thread -> (read, decode) wall of the batch
    std::uint32_t last = 0;
    std::int64_t last_end = INT64_MIN;
    for (const HostRange* p : producers) {
      per_thread[p->thread][p->role == Role::retrieval ? 0 : 1] += ms(p->end_ns - p->begin_ns);
      if (p->end_ns > last_end) { last_end = p->end_ns; last = p->thread; }
    }
    if (per_thread.size() > 1) {
      const auto [r, d] = per_thread[last];
      if (r + d > 0) { r_tot = r; d_tot = d; }
    }
  }
  if (own_batch && r_tot + d_tot > 0) {
    s.retrieval_fraction = r_tot / (r_tot + d_tot);
    s.known = true;
  } else if (r_ov + d_ov > 0) {
    s.retrieval_fraction = r_ov / (r_ov + d_ov);
    s.known = true;
  } else if (r_tot + d_tot > 0) {
    s.retrieval_fraction = r_tot / (r_tot + d_tot);
    s.known = true;
  }
  s.read_ms = r_ov;
  s.decode_ms = d_ov;
  if (r_wall > 0) s.read_cpu_ratio = r_cpu / r_wall;
  if (d_wall > 0) s.decode_cpu_ratio = d_cpu / d_wall;
  if (r_qwall > 0) s.read_runq_ratio = std::min(1.0, r_q / r_qwall);
  if (d_qwall > 0) s.decode_runq_ratio = std::min(1.0, d_q / d_qwall);
  return s;
}

}  // namespace stalldx::diagnose
