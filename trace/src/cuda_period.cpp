// Rule 4 of step inference (step_inference.h): no range marks the steps, so the period of the launching
// process's CUDA activity does — its batch copies, else the kernel with the same work between its launches.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "stalldx/record/step_inference.h"
#include "step_inference_internal.h"

namespace stalldx::record::detail {

namespace {

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

}  // namespace

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

}  // namespace stalldx::record::detail
