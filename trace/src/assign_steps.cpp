// Steps from step ranges and device work from its call (merge.h assign_steps).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <unordered_map>

#include "stalldx/record/merge.h"
#include "stalldx/record/part_format.h"

namespace stalldx::record {

namespace {

// The number a name ends with ("ProfilerStep#12" -> 12), -1 when none (or too long to be a step).
std::int64_t trailing_number(const std::string& s) {
  std::size_t e = s.size();
  std::size_t b = e;
  while (b > 0 && std::isdigit(static_cast<unsigned char>(s[b - 1]))) --b;
  if (b == e || e - b > 15) return -1;
  std::int64_t v = -1;
  std::from_chars(s.data() + b, s.data() + e, v);
  return v;
}

}  // namespace

std::vector<std::size_t> kept_step_ranges(const Trace& t, std::uint32_t& consumer) {
  std::map<std::uint32_t, int> per_thread;
  for (const HostRange& r : t.ranges)
    if (r.role == Role::step) per_thread[r.thread]++;
  if (per_thread.empty()) return {};
  consumer = per_thread.begin()->first;
  for (auto& [th, n] : per_thread)
    if (n > per_thread[consumer]) consumer = th;
  std::vector<std::size_t> steps;
  for (std::size_t i = 0; i < t.ranges.size(); ++i)
    if (t.ranges[i].role == Role::step && t.ranges[i].thread == consumer) steps.push_back(i);
  std::sort(steps.begin(), steps.end(), [&](std::size_t a, std::size_t b) {
    const HostRange &x = t.ranges[a], &y = t.ranges[b];
    return x.begin_ns != y.begin_ns ? x.begin_ns < y.begin_ns : x.end_ns > y.end_ns;
  });
  std::vector<std::size_t> top;
  for (std::size_t i : steps)
    if (top.empty() || t.ranges[i].begin_ns >= t.ranges[top.back()].end_ns) top.push_back(i);
  return top;
}

std::uint64_t assign_steps(Trace& t, const std::vector<StepMark>* from_marks) {
  std::uint32_t consumer = 0;
  const std::vector<std::size_t> kept = kept_step_ranges(t, consumer);
  if (kept.empty()) return 0;
  // The kept step ranges, in time order; the other step ranges become `user`.
  std::vector<HostRange*> top;
  std::vector<bool> is_kept(t.ranges.size(), false);
  for (std::size_t i : kept) {
    top.push_back(&t.ranges[i]);
    is_kept[i] = true;
  }
  // A step-named range inside a kept step on its thread ("train_step" in "iteration 7") is that step's
  // work: compute. Elsewhere (another thread, between the steps) it is a user range.
  const auto inside_kept = [&](const HostRange& r) {
    if (r.thread != consumer) return false;
    auto it = std::upper_bound(top.begin(), top.end(), r.begin_ns, [](std::int64_t v, const HostRange* k) { return v < k->begin_ns; });
    return it != top.begin() && r.end_ns <= (*std::prev(it))->end_ns;
  };
  std::uint64_t demoted = 0;
  for (std::size_t i = 0; i < t.ranges.size(); ++i)
    if (t.ranges[i].role == Role::step && !is_kept[i]) {
      t.ranges[i].role = inside_kept(t.ranges[i]) ? Role::compute : Role::user;
      demoted++;
    }
  // Step ids: the number the names carry when they all carry distinct increasing ones (ProfilerStep#N),
  // else the ordinal.
  bool numbered = true;
  std::int64_t last = -1;
  for (HostRange* r : top) {
    const std::int64_t n = trailing_number(t.name(r->name));
    if (n <= last) { numbered = false; break; }
    last = n;
  }
  // Ordinals in a trace that begins mid-run: offset by the run's number of the first kept step, which a
  // live mark placed exactly at a kept step's begin tells (marks are rare: one per window edge).
  std::int64_t first = 0;
  if (!numbered && from_marks != nullptr) {
    for (std::size_t i = 0, m = 0; i < top.size() && m < from_marks->size();) {
      const StepMark& mk = (*from_marks)[m];
      if (mk.begin_ns < top[i]->begin_ns) ++m;
      else if (mk.begin_ns > top[i]->begin_ns) ++i;
      else {
        // The Python hook's iterations are marked live when one ends, where the next begins
        // (part_writer's complete()): the mark counts the iterations before this one, less the first.
        const std::int64_t run_index = mk.step + (python_hook_step_name(t.name(top[i]->name)) ? 1 : 0);
        first = std::max<std::int64_t>(0, run_index - static_cast<std::int64_t>(i));
        break;
      }
    }
    if (first > 0) t.meta.config[kStepsBeforeTraceKey] = std::to_string(first);
  }
  std::vector<std::int64_t> ids(top.size());
  for (std::size_t i = 0; i < top.size(); ++i) ids[i] = numbered ? trailing_number(t.name(top[i]->name)) : first + static_cast<std::int64_t>(i);
  const auto step_at = [&](std::int64_t ts) -> std::int64_t {
    auto it = std::upper_bound(top.begin(), top.end(), ts, [](std::int64_t v, const HostRange* r) { return v < r->begin_ns; });
    if (it == top.begin()) return -1;
    --it;
    return ts <= (*it)->end_ns ? ids[static_cast<std::size_t>(it - top.begin())] : -1;
  };
  for (std::size_t i = 0; i < top.size(); ++i) {
    top[i]->step = ids[i];
    top[i]->batch = ids[i];
  }
  for (HostRange& r : t.ranges) {
    if (r.thread != consumer || r.role == Role::step) continue;
    r.step = step_at(r.begin_ns);
    if (r.role == Role::wait_batch && r.batch < 0) r.batch = r.step;  // a payload names the batch; else the step's
  }
  std::unordered_map<std::uint64_t, std::int64_t> call_step;
  for (RuntimeCall& c : t.calls) {
    c.step = step_at(c.begin_ns);
    if (c.correlation != 0) call_step[c.correlation] = c.step;
  }
  // Unmatched: device work inside the steps' span that no step claims. Work before the first step or
  // after the last (start-up, calibration, shutdown) is outside the steps, not a gap in the records.
  t.meta.unmatched_device = 0;
  const std::int64_t span_begin = top.empty() ? 0 : top.front()->begin_ns, span_end = top.empty() ? 0 : top.back()->end_ns;
  std::unordered_map<std::uint64_t, std::int64_t> call_begin;
  for (const RuntimeCall& c : t.calls) call_begin.emplace(c.correlation, c.begin_ns);
  for (DeviceActivity& a : t.activities) {
    auto it = call_step.find(a.correlation);
    a.step = it == call_step.end() ? -1 : it->second;
    if (a.step >= 0 || !is_device_work(a.kind)) continue;
    auto cb = call_begin.find(a.correlation);
    const std::int64_t when = cb == call_begin.end() ? a.begin_ns : cb->second;
    if (when >= span_begin && when <= span_end) t.meta.unmatched_device++;
  }
  return demoted;
}

}  // namespace stalldx::record
