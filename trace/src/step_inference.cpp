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
#include "step_inference_internal.h"

namespace stalldx::record {

namespace {
constexpr std::array<const char*, 5> kRuleNames = {"none", "named", "numbered_family", "python_loop", "cuda_period"};
}  // namespace

namespace detail {
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
}  // namespace detail

namespace {
using detail::launching_lane;
using detail::thread_label;
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
      } else if (detail::cuda_period(t, ev)) {
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
