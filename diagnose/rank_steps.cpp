// One rank's trace reduced to what the cross-rank analysis keeps (ranks.h RankSteps): its verdict per step
// and when it arrived at and left each step's collective — from the collective's device work, its host
// range, NCCL's kernels by name, or, where no collective left a record, when the step's batch was ready.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <optional>

#include "stalldx/collective_kernel.h"
#include "stalldx/diagnose/ranks.h"
#include "stalldx/launched_within.h"
#include "stalldx/rank_facts.h"

namespace stalldx::diagnose {

namespace {
// A number the world wrote beside the run config (clock offset, uncertainty); false if absent or not one.
template <typename T>
bool meta_number(const Trace& t, const char* key, T& out) {
  const auto it = t.meta.config.find(key);
  if (it == t.meta.config.end()) return false;
  const std::string& v = it->second;
  return std::from_chars(v.data(), v.data() + v.size(), out).ec == std::errc{};
}
}  // namespace

namespace {
// A rank with no device records (a CPU job, `record --no-cuda`): what its step waited on, when one class
// of its waits is most of a stall above the threshold — so the straggler is named with its cause.
std::optional<Verdict> host_only_class(const StepDiagnosis& sd, const Thresholds& th) {
  if (sd.verdict != Verdict::no_device_records) return std::nullopt;
  const double limit = th.device_bound_limit(sd.window_ms);
  if (sd.stall_ms <= limit) return std::nullopt;
  double unsplit = 0;  // waits on a loader whose work left no records (torch.profiler: workers are other processes)
  for (const CauseShare& c : sd.causes) unsplit += unsplit_input(c.cause) ? c.ms : 0;
  if (unsplit >= th.dominant_share * sd.stall_ms) return Verdict::input;
  if (sd.top == StallClass::unattributed || sd.class_ms[static_cast<int>(sd.top)] < th.dominant_share * sd.stall_ms) return std::nullopt;
  return static_cast<Verdict>(sd.top);
}
}  // namespace

Status rank_steps(const Trace& t, const std::string& file, const Thresholds& th, RankSteps& out) {
  out = RankSteps{};
  out.file = file;
  std::int64_t offset = 0;
  // rank and world_size are run fields: parsed and range-checked by the field table.
  RunConfig c;
  for (const char* field : {"rank", "world_size"}) {
    const auto it = t.meta.config.find(field);
    if (it == t.meta.config.end() || !t.meta.config.count(rank_facts::kRunId))
      return Status::invalid(fmt::format("{}: not a rank's trace (no rank, world_size and run_id: written by `stalldx run` under mpirun)", file));
    if (Status st = find_run_field(field)->assign(c, it->second); !st.is_ok()) return st.prefixed(file);
  }
  out.rank = c.rank;
  out.world_size = c.world_size;
  if (out.rank >= out.world_size)
    return Status::invalid(fmt::format("{}: rank {} of world size {} is impossible", file, out.rank, out.world_size));
  out.run_id = t.meta.config.at(rank_facts::kRunId);
  if (auto h = t.meta.config.find(rank_facts::kHost); h != t.meta.config.end()) out.host = h->second;
  meta_number(t, rank_facts::kClockOffsetNs, offset);
  meta_number(t, rank_facts::kClockUncertaintyNs, out.clock_uncertainty_ns);
  meta_number(t, rank_facts::kBaseTimeNs, out.base_time_ns);
  meta_number(t, rank_facts::kStuckInCollectiveStep, out.stuck_step);
  meta_number(t, rank_facts::kStoppedByRank, out.stopped_by_rank);
  out.interrupted = t.meta.interrupted;
  const Report rep = diagnose(t, th);
  out.standin = rep.coverage.standin;
  // A rank arrives at a step's collective when its host enters the collective range — or, when that
  // range only enqueued device work (NCCL), when that work began on the device: the other ranks' kernels
  // wait there for this one's, whatever its host did meanwhile.
  // And it leaves when the last of those ends: the next step's own time runs from there.
  std::map<std::int64_t, std::int64_t> arrive, leave;  // step -> first collective begin, last collective end
  const auto span = [&arrive, &leave](std::int64_t step, std::int64_t begin_ns, std::int64_t end_ns) {
    if (auto [it, fresh] = arrive.emplace(step, begin_ns); !fresh) it->second = std::min(it->second, begin_ns);
    if (auto [it, fresh] = leave.emplace(step, end_ns); !fresh) it->second = std::max(it->second, end_ns);
  };
  for (std::size_t i : activities_launched_within(t, Role::collective)) {
    const DeviceActivity& a = t.activities[i];
    if (a.step < 0 || !is_device_work(a.kind)) continue;
    span(a.step, a.begin_ns, a.end_ns);
    out.arrival = RankSteps::Arrival::device_collective;
  }
  if (out.arrival == RankSteps::Arrival::none) {
    for (const HostRange& r : t.ranges)
      if (r.role == Role::collective && r.step >= 0) {
        span(r.step, r.begin_ns, r.end_ns);
        out.arrival = RankSteps::Arrival::host_collective;
      }
  }
  if (out.arrival == RankSteps::Arrival::none) {  // NCCL's kernels launched by no marked call (DDP's reducer)
    for (const DeviceActivity& a : t.activities)
      if (a.step >= 0 && a.kind == ActivityKind::kernel && is_collective_kernel(t.names[a.name])) {
        span(a.step, a.begin_ns, a.end_ns);
        out.arrival = RankSteps::Arrival::device_collective;
      }
  }
  if (out.arrival == RankSteps::Arrival::none) {
    // No collective recorded: a step arrives when its batch is ready (its step began, or its last wait
    // for the batch ended) and leaves when it ends — the others' all-reduce held them until then.
    for (const HostRange& r : t.ranges)
      if (r.role == Role::step && r.step >= 0) {
        span(r.step, r.begin_ns, r.end_ns);
      }
    for (const HostRange& r : t.ranges)
      if (r.role == Role::wait_batch && r.step >= 0)
        if (auto it = arrive.find(r.step); it != arrive.end()) {
          const auto end = leave.find(r.step);
          it->second = std::max(it->second, std::min(r.end_ns, end->second));
        }
    if (!arrive.empty()) out.arrival = RankSteps::Arrival::batch_ready;
  }
  out.steps.reserve(rep.steps.size());
  for (const StepDiagnosis& sd : rep.steps) {
    RankSteps::Step s;
    s.step = sd.step;
    s.warmup = sd.warmup;
    s.window_ms = sd.window_ms;
    s.verdict = host_only_class(sd, th).value_or(sd.verdict);
    s.evidence = sd.evidence;
    if (auto it = leave.find(sd.step); it != leave.end()) s.leave_ns = it->second + offset;
    if (auto it = arrive.find(sd.step); it != arrive.end()) {
      s.arrive_ns = it->second + offset;
      if (auto prev = leave.find(sd.step - 1); prev != leave.end() && it->second >= prev->second) s.own_ns = it->second - prev->second;
    }
    out.steps.push_back(std::move(s));
  }
  std::sort(out.steps.begin(), out.steps.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  return Status::ok();
}

std::string rank_steps_line(const RankSteps& r) {
  std::array<int, kVerdictCount> n{};
  int steady = 0;
  for (const RankSteps::Step& s : r.steps)
    if (!s.warmup) {
      ++steady;
      ++n[static_cast<std::size_t>(s.verdict)];
    }
  std::string s = fmt::format("rank {} ({}, {}): {} steady steps", r.rank, r.host.empty() ? "?" : r.host, r.file, steady);
  for (int v = 0; v < kVerdictCount; ++v)
    if (n[static_cast<std::size_t>(v)]) s += fmt::format(" | {} {}", verdict_name(static_cast<Verdict>(v), r.standin), n[static_cast<std::size_t>(v)]);
  return s + "\n";
}

}  // namespace stalldx::diagnose
