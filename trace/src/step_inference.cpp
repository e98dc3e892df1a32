#include "stalldx/record/step_inference.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "stalldx/record/merge.h"
#include "stalldx/record/part_format.h"

namespace stalldx::record {

namespace {

constexpr std::array<const char*, 5> kRuleNames = {"none", "named", "numbered_family", "python_loop", "cuda_period"};

std::string thread_label(const Trace& t, std::uint32_t lane) {
  if (lane >= t.threads.size()) return fmt::format("lane {}", lane);
  const ThreadInfo& th = t.threads[lane];
  return th.pid != 0 ? fmt::format("thread '{}' (pid {}, tid {})", th.name, th.pid, th.os_tid) : fmt::format("thread '{}'", th.name);
}

// The lane whose runtime calls launched most device work; -1 when no call launched any.
std::int64_t launching_lane(const Trace& t) {
  std::unordered_set<std::uint64_t> with_work;
  for (const DeviceActivity& a : t.activities)
    if (a.correlation != 0 && is_device_work(a.kind)) with_work.insert(a.correlation);
  std::map<std::uint32_t, std::size_t> per_lane;
  for (const RuntimeCall& c : t.calls)
    if (with_work.count(c.correlation)) per_lane[c.thread]++;
  std::int64_t best = -1;
  std::size_t most = 0;
  for (auto& [lane, n] : per_lane)
    if (n > most) { most = n; best = lane; }
  return best;
}

}  // namespace

std::string masked_name(std::string_view name) {
  std::string out;
  bool digits = false, any = false;
  for (char c : name) {
    const bool d = c >= '0' && c <= '9';
    if (d && !digits) out += '#';
    if (!d) out += c;
    digits = d;
    any = any || d;
  }
  return any ? out : std::string();
}

namespace {

struct Family {
  std::uint32_t lane = 0;
  std::string key;
  std::vector<HostRange*> ranges;
  std::int64_t covered_ns = 0;
  std::string refused;  // why it cannot be the steps (empty: it can)
};

std::vector<Family> numbered_families(Trace& t) {
  std::map<std::pair<std::uint32_t, std::string>, Family> by_key;
  std::unordered_map<std::uint32_t, std::string> mask_of;  // per name id, computed once
  for (HostRange& r : t.ranges) {
    if (r.role != Role::user) continue;  // a range with a phase role (a wait, a copy) is not a step candidate
    auto [it, fresh] = mask_of.emplace(r.name, std::string());
    if (fresh) it->second = masked_name(t.name(r.name));
    if (it->second.empty()) continue;
    Family& f = by_key[{r.thread, it->second}];
    f.lane = r.thread;
    f.key = it->second;
    f.ranges.push_back(&r);
  }
  std::vector<Family> out;
  for (auto& [k, f] : by_key) {
    if (f.ranges.size() < static_cast<std::size_t>(kMinFamily)) continue;
    std::sort(f.ranges.begin(), f.ranges.end(), [](const HostRange* a, const HostRange* b) { return a->begin_ns < b->begin_ns; });
    std::unordered_set<std::uint32_t> names;
    for (std::size_t i = 0; i < f.ranges.size(); ++i) {
      names.insert(f.ranges[i]->name);
      // Saturating: ranges of a forged part could sum past int64 (each is end >= begin > 0, merge.cpp).
      const std::int64_t d = f.ranges[i]->end_ns - f.ranges[i]->begin_ns;
      f.covered_ns = d > INT64_MAX - f.covered_ns ? INT64_MAX : f.covered_ns + d;
      if (i > 0 && f.ranges[i]->begin_ns < f.ranges[i - 1]->end_ns && f.refused.empty()) f.refused = "its ranges overlap";
    }
    if (names.size() < 2 && f.refused.empty()) f.refused = "every one carries the same number";
    out.push_back(std::move(f));
  }
  return out;
}

void add_step_ranges(Trace& t, std::uint32_t lane, const std::vector<std::int64_t>& starts, std::int64_t last_end, const std::string& name) {
  const std::uint32_t id = t.intern(name);
  for (std::size_t i = 0; i < starts.size(); ++i) {
    HostRange r;
    r.begin_ns = starts[i];
    r.end_ns = i + 1 < starts.size() ? starts[i + 1] : std::max(last_end, starts[i]);
    r.thread = lane;
    r.name = id;
    r.role = Role::step;
    t.ranges.push_back(r);
  }
}

// The lanes of the process that holds `lane` (pid 0: every lane with pid 0, the recording process).
std::vector<bool> lanes_of_process(const Trace& t, std::uint32_t lane) {
  std::vector<bool> same(t.threads.size(), false);
  const std::int64_t pid = lane < t.threads.size() ? t.threads[lane].pid : 0;
  for (std::size_t i = 0; i < t.threads.size(); ++i) same[i] = t.threads[i].pid == pid;
  if (lane >= same.size()) same.resize(lane + 1, false);
  same[lane] = true;
  return same;
}

// One launch of device work by a lane of the launching process, at its call's begin (host clock).
struct Launch {
  std::int64_t at = 0;
  std::uint32_t lane = 0;
  std::uint32_t key = 0;  // the kernel's name id
};

// The lane that issued most of `launches`.
std::uint32_t majority_lane(const std::vector<Launch>& launches) {
  std::map<std::uint32_t, std::size_t> n;
  for (const Launch& l : launches) n[l.lane]++;
  return std::max_element(n.begin(), n.end(), [](const auto& a, const auto& b) { return a.second < b.second; })->first;
}

// Whether the kernel launches between consecutive launches of `positions` (indexes into the process's
// kernel launches in time order) are the same work every time: the multiset of kernel names in each
// segment (its signature: a sum of mixed name ids, order-free, since threads interleave) equals the most
// common one in ≥ 75 % of all segments and ≥ 90 % of those after the first quarter (warm-up: cuDNN
// autotuning, lazily built optimizer state). A kernel launched several times per iteration splits it into
// unequal parts; one launched once per layer leaves the loss and optimizer kernels in every L-th segment.
bool same_work_between(const std::vector<std::size_t>& positions, const std::vector<std::uint64_t>& prefix) {
  const std::size_t segments = positions.size() - 1;
  std::vector<std::uint64_t> sig(segments);
  for (std::size_t j = 0; j < segments; ++j) sig[j] = prefix[positions[j + 1]] - prefix[positions[j]];
  std::unordered_map<std::uint64_t, std::size_t> count;
  std::uint64_t mode = 0;
  std::size_t most = 0;
  for (std::uint64_t s : sig)
    if (++count[s] > most) { most = count[s]; mode = s; }
  const std::size_t skip = segments / 4;
  const auto late = static_cast<std::size_t>(std::count(sig.begin() + static_cast<std::ptrdiff_t>(skip), sig.end(), mode));
  return 4 * most >= 3 * segments && 10 * late >= 9 * (segments - skip);
}

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finalizer: name ids to well-spread summands
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Rule 4: the period of the launching process's CUDA activity. PyTorch runs a loop's backward pass on
// an autograd thread of its own and a prefetching loader may copy on a feeder thread, so every lane of the
// process that launches most device work counts, and the steps go on the lane that marks them.
bool cuda_period(Trace& t, StepEvidence& ev) {
  const std::int64_t launcher = launching_lane(t);
  if (launcher < 0) return false;
  const std::vector<bool> in_process = lanes_of_process(t, static_cast<std::uint32_t>(launcher));
  std::unordered_map<std::uint64_t, const RuntimeCall*> call_of;
  std::unordered_map<std::uint32_t, std::int64_t> last_call_end;  // per lane
  for (const RuntimeCall& c : t.calls)
    if (c.thread < in_process.size() && in_process[c.thread]) {
      call_of.emplace(c.correlation, &c);
      std::int64_t& e = last_call_end[c.thread];
      e = std::max(e, c.end_ns);
    }
  // Host-to-device copies by size: the largest size that recurs is the batch.
  std::map<std::uint64_t, std::vector<Launch>, std::greater<>> copies_by_bytes;
  std::vector<Launch> kernels;
  std::unordered_map<std::uint32_t, std::size_t> kernels_per_lane;
  for (const DeviceActivity& a : t.activities) {
    auto it = call_of.find(a.correlation);
    if (a.correlation == 0 || it == call_of.end()) continue;
    const Launch l{it->second->begin_ns, it->second->thread, a.name};
    if (a.kind == ActivityKind::memcpy_h2d) copies_by_bytes[a.bytes].push_back(l);
    else if (a.kind == ActivityKind::kernel) {
      kernels.push_back(l);
      kernels_per_lane[l.lane]++;
    }
  }
  std::vector<std::int64_t> starts;
  std::uint32_t lane = 0;
  std::vector<std::int64_t> kernel_times;  // every kernel launch of the process, by time
  for (const Launch& k : kernels) kernel_times.push_back(k.at);
  std::sort(kernel_times.begin(), kernel_times.end());
  for (auto& [bytes, copies] : copies_by_bytes) {
    if (copies.size() < static_cast<std::size_t>(kMinFamily)) continue;
    // The largest size that recurs is the batch, or no copy marks the steps: a lane that only copies (a
    // feeder thread filling a queue ahead of the loop) does not pace them, and a smaller copy of the loop's
    // own (a 2 KB one on every third step, on the H100) is not the batch.
    const std::uint32_t by = majority_lane(copies);
    std::vector<std::int64_t> mine;
    for (const Launch& c : copies)
      if (c.lane == by) mine.push_back(c.at);
    std::sort(mine.begin(), mine.end());
    // Copies with no kernel launched between them are one batch's: a batch copied sample by sample (128
    // copies a step on the H200 read as 1024 steps), or inputs and targets of one size.
    std::vector<std::int64_t> bursts;
    for (std::size_t i = 0; i < mine.size(); ++i)
      if (i == 0 || std::lower_bound(kernel_times.begin(), kernel_times.end(), mine[i]) !=
                        std::upper_bound(kernel_times.begin(), kernel_times.end(), mine[i - 1]))
        bursts.push_back(mine[i]);
    if (bursts.size() < static_cast<std::size_t>(kMinFamily) || (!kernels.empty() && kernels_per_lane[by] < bursts.size())) break;
    lane = by;
    starts = bursts;
    ev.found = bursts.size() == mine.size()
                   ? fmt::format("one step per {}-byte host-to-device copy issued by {} ({} copies)", bytes, thread_label(t, lane), mine.size())
                   : fmt::format("one step per burst of {}-byte host-to-device copies issued by {} ({} copies in {} bursts, no kernel "
                                 "launched between the copies of one)",
                                 bytes, thread_label(t, lane), mine.size(), bursts.size());
    t.meta.config[kStepsBatchCopyBytesKey] = std::to_string(bytes);
    break;
  }
  if (starts.empty() && kernels.size() > static_cast<std::size_t>(kMinFamily)) {
    // The kernel launched least often with the same work between its launches: once an iteration.
    std::sort(kernels.begin(), kernels.end(), [](const Launch& a, const Launch& b) { return a.at < b.at; });
    std::vector<std::uint64_t> prefix(kernels.size() + 1, 0);  // wraps: only differences are compared
    std::map<std::uint32_t, std::vector<std::size_t>> positions;
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      prefix[i + 1] = prefix[i] + mix(kernels[i].key);
      positions[kernels[i].key].push_back(i);
    }
    const std::vector<std::size_t>* best = nullptr;
    std::uint32_t best_key = 0;
    for (const auto& [key, pos] : positions) {
      if (pos.size() < static_cast<std::size_t>(kMinFamily)) continue;
      if (best != nullptr && (pos.size() > best->size() || (pos.size() == best->size() && pos.front() > best->front()))) continue;
      if (same_work_between(pos, prefix)) { best = &pos; best_key = key; }
    }
    if (best != nullptr) {
      std::vector<Launch> marks;
      for (std::size_t i : *best) marks.push_back(kernels[i]);
      lane = majority_lane(marks);
      for (const Launch& m : marks)
        if (m.lane == lane) starts.push_back(m.at);
      ev.found = fmt::format("one step per launch of kernel '{}' by {} ({} launches, the same kernels between each)",
                             t.name(best_key).substr(0, 80), thread_label(t, lane), starts.size());
    }
  }
  if (starts.size() < static_cast<std::size_t>(kMinFamily)) {
    t.meta.config.erase(kStepsBatchCopyBytesKey);
    return false;
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  add_step_ranges(t, lane, starts, last_call_end[lane], "step (inferred from CUDA activity)");
  return true;
}

}  // namespace

const char* step_rule_name(StepRule rule) { return kRuleNames[static_cast<int>(rule)]; }
bool step_rule_from_name(std::string_view name, StepRule& out) {
  for (std::size_t i = 0; i < kRuleNames.size(); ++i)
    if (name == kRuleNames[i]) { out = static_cast<StepRule>(i); return true; }
  return false;
}

StepEvidence infer_steps(Trace& t) {
  StepEvidence ev;
  t.meta.config.erase(kStepsBatchCopyBytesKey);  // set again only where rule 4 finds the steps by a copy
  // The Python hook's iterations: steps only when nothing the program itself said marks them.
  std::vector<HostRange*> loop_iterations;
  std::size_t backward_iterations = 0;  // of those, a loop without a DataLoader (backward to backward)
  // evaluation: the hook's DataLoader iterations with no backward pass; prefetch: its DataLoader iterations
  // on a thread that runs none while another thread does
  std::size_t named = 0, evaluation = 0, prefetch = 0;
  for (HostRange& r : t.ranges) {
    if (r.role == Role::user && t.name(r.name) == kPythonEvalIterationName) ++evaluation;
    if (r.role == Role::user && t.name(r.name) == kPythonPrefetchIterationName) ++prefetch;
    if (r.role != Role::step) continue;
    if (python_hook_step_name(t.name(r.name))) {
      loop_iterations.push_back(&r);
      backward_iterations += t.name(r.name) == kPythonBackwardStepName ? 1 : 0;
    }
    else ++named;
  }
  const auto demote_loop = [&] {
    for (HostRange* r : loop_iterations) r->role = Role::user;
  };
  if (named > 0) {
    ev.rule = StepRule::named;
    demote_loop();
    // The steps are the ones assign_steps keeps (the outermost on the thread with most); the others —
    // nested in them ("train_step" in "iteration 7") or on other threads — are named apart.
    std::uint32_t consumer = 0;
    const std::vector<std::size_t> kept = kept_step_ranges(t, consumer);
    std::vector<std::string> kept_names, other_names;
    for (std::size_t i : kept)
      if (kept_names.size() < 3) kept_names.push_back(fmt::format("'{}'", t.name(t.ranges[i].name).substr(0, 60)));
    std::vector<bool> is_kept(t.ranges.size(), false);
    for (std::size_t i : kept) is_kept[i] = true;
    std::unordered_set<std::uint32_t> other_ids;  // distinct names of the others
    for (std::size_t i = 0; i < t.ranges.size(); ++i)
      if (t.ranges[i].role == Role::step && !is_kept[i] && other_ids.insert(t.ranges[i].name).second && other_names.size() < 2)
        other_names.push_back(fmt::format("'{}'", t.name(t.ranges[i].name).substr(0, 60)));
    ev.found = fmt::format("{} ranges named as steps ({}{})", kept.size(), fmt::join(kept_names, ", "), kept.size() > 3 ? ", ..." : "");
    if (named > kept.size())
      ev.found += fmt::format("; {} more inside them or on other threads ({}{}): the steps' work, not steps", named - kept.size(),
                              fmt::join(other_names, ", "), other_ids.size() > other_names.size() ? ", ..." : "");
    ev.how_to_override = "--step REGEX picks other ranges; a roles file ([[role]] role = \"user\") unmaps a name";
  } else {
    std::vector<Family> families = numbered_families(t);
    const std::int64_t lane = launching_lane(t);
    const bool on_launcher = std::any_of(families.begin(), families.end(), [&](const Family& f) {
      return f.refused.empty() && static_cast<std::int64_t>(f.lane) == lane;
    });
    Family* best = nullptr;
    for (Family& f : families) {
      if (!f.refused.empty()) continue;
      if (on_launcher && static_cast<std::int64_t>(f.lane) != lane) {
        f.refused = "not on the thread that launches most device work";
        continue;
      }
      if (best == nullptr || f.covered_ns > best->covered_ns ||
          (f.covered_ns == best->covered_ns && f.ranges.size() > best->ranges.size()))
        best = &f;
    }
    if (best != nullptr) {
      ev.rule = StepRule::numbered_family;
      ev.found = fmt::format("'{}' on {}: {} ranges, {:.1f} ms in all", best->key.substr(0, 60), thread_label(t, best->lane),
                             best->ranges.size(), static_cast<double>(best->covered_ns) / 1e6);
      for (HostRange* r : best->ranges) r->role = Role::step;
      for (const Family& f : families)
        if (&f != best)
          ev.passed_over.push_back(fmt::format("'{}' on {} ({} ranges, {:.1f} ms): {}", f.key.substr(0, 60), thread_label(t, f.lane),
                                               f.ranges.size(), static_cast<double>(f.covered_ns) / 1e6,
                                               f.refused.empty() ? "covers less time" : f.refused));
      ev.how_to_override = "--step REGEX (found anywhere in the name, as grep) names the step ranges";
      demote_loop();
    } else {
      for (const Family& f : families)
        ev.passed_over.push_back(fmt::format("'{}' on {} ({} ranges): {}", f.key.substr(0, 60), thread_label(t, f.lane), f.ranges.size(), f.refused));
      if (!loop_iterations.empty()) {
        ev.rule = StepRule::python_loop;
        // Iterations of several DataLoaders read in one loop (zip(a, b)) overlap: each loop iteration is a step once.
        std::uint32_t lane = 0;
        const std::vector<std::size_t> kept = kept_step_ranges(t, lane);
        const std::size_t steps = kept.size(), inside = loop_iterations.size() - steps;
        const auto kept_backward = static_cast<std::size_t>(std::count_if(kept.begin(), kept.end(), [&](std::size_t i) {
          return t.name(t.ranges[i].name) == kPythonBackwardStepName;
        }));
        const bool backward_steps = kept_backward == steps;
        const std::size_t loader_iterations = prefetch + loop_iterations.size() - backward_iterations;  // the DataLoader's, any thread
        ev.found = backward_steps
                       ? fmt::format("{} iterations of the training loop, from one backward pass to the next (the Python hook; {})", steps,
                                     loader_iterations > 0
                                         ? fmt::format("its batches from a queue that another thread fills from a DataLoader: {} "
                                                       "iterations there, not counted", loader_iterations)
                                         : std::string("no DataLoader"))
                       : fmt::format("{} iterations of the loop over a DataLoader (the Python hook{}{})", steps,
                                     kept_backward == 0 ? ""
                                                        : fmt::format("; {} of them after a pass of its DataLoader ended, from one backward "
                                                                      "pass to the next (the loop went on without it: itertools.cycle?)",
                                                                      kept_backward),
                                     inside == 0 ? "" : fmt::format("; {} iterations of other DataLoaders or threads overlapping them, not counted", inside));
        if (evaluation > 0)
          ev.found += fmt::format("; {} more without a backward pass (evaluation, not counted as steps)", evaluation);
        ev.how_to_override = "--step REGEX names your own step ranges; --no-python-hook turns the hook off";
      } else if (cuda_period(t, ev)) {
        ev.rule = StepRule::cuda_period;
        ev.how_to_override = "no range marks the steps: put one around each iteration (torch.cuda.nvtx.range_push/pop, nvtxRangePush) "
                             "or pass --step REGEX";
      } else {
        ev.how_to_override = "name the ranges around each iteration 'step N' or 'iter N', or pass --step REGEX";
      }
    }
  }
  t.meta.config["steps_rule"] = step_rule_name(ev.rule);
  t.meta.config["steps_found_by"] = ev.rule == StepRule::none ? std::string("no rule found steps") : ev.found;
  return ev;
}

}  // namespace stalldx::record
