// Merging a parts folder into one trace: the listing by process, then every thread's ranges, then each
// process's CUPTI parts (window by window), the sampled windows, the steps.
#include "stalldx/record/merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "part_files.h"
#include "stalldx/record/part_format.h"
#include "stalldx/record/sampling.h"
#include "stalldx/record/step_inference.h"
#include "stalldx/trace_io.h"

namespace stalldx::record {

namespace fs = std::filesystem;

namespace {
// A sampled recording's windows into the trace's metadata (sampling.h). A process that ran CUDA keeps
// the windows whose records exist (the cap removes old ones; a window may close before cuInit); where
// no process ran CUDA (a program marking steps with no device, tests), those that marked steps keep all.
// `marks`: the step marks of the processes whose windows are kept, in time order.
void note_windows(const std::map<std::int64_t, ProcessParts>& procs, Trace& out, MergeReport& rep, std::vector<StepMark>& marks) {
  std::vector<DeviceWindow> kept;
  std::optional<SamplePlan> plan;
  bool any = false, cuda = false;
  for (const auto& [pid, p] : procs) cuda = cuda || (p.windows && p.info.used_cuda);
  for (const auto& [pid, p] : procs) {
    if (!p.windows) continue;
    any = true;
    // Only a process that ran CUDA, or (none did) one that marked steps, has windows worth keeping: a
    // shell or a loader worker is "recording" from its start and would cover every step.
    if (cuda ? !p.info.used_cuda : !p.windows->stepped) continue;
    if (p.windows->plan) plan = p.windows->plan;
    marks.insert(marks.end(), p.windows->steps.begin(), p.windows->steps.end());
    for (const auto& [n, w] : p.windows->windows) {
      if (p.info.used_cuda && !p.cuda_files.count(n)) {
        rep.windows_without_records++;
        continue;
      }
      if (rep.ring_horizon_ns > 0 && w.begin_ns < rep.ring_horizon_ns) continue;  // before a ring's horizon: left out with its records
      kept.push_back(w);
    }
  }
  if (!any) return;
  std::sort(marks.begin(), marks.end(), [](const StepMark& a, const StepMark& b) { return a.begin_ns < b.begin_ns; });
  rep.device_windows = kept.size();
  rep.sample_plan = plan.value_or(SamplePlan{});
  set_device_windows(out.meta, rep.sample_plan, kept);
  if (rep.windows_without_records > 0) out.meta.config["device_windows_without_records"] = std::to_string(rep.windows_without_records);
}
}  // namespace

namespace {

// Reads the parts folder's listing into `procs`: each process's files by kind. Only regular files: a
// FIFO planted there would block the merge, a link would read elsewhere.
Status scan_parts(const std::string& dir, const MergeOptions& o, std::map<std::int64_t, ProcessParts>& procs, MergeReport& rep) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return Status::io(fmt::format("{}: {}", dir, ec.message()));
  for (const fs::directory_entry& e : it) {
    const std::string f = e.path().filename().string();
    if (e.is_symlink(ec) || !e.is_regular_file(ec)) {
      rep.unreadable_parts++;
      rep.problems.push_back(fmt::format("{}: not a regular file (refused)", e.path().string()));
      continue;
    }
    const auto dot = f.find('.');
    std::int64_t pid = 0;
    if (dot == std::string::npos || !parse_int(std::string_view(f).substr(0, dot), pid)) continue;
    ProcessParts& p = procs[pid];
    p.info.pid = pid;
    const std::string rest = f.substr(dot);
    if (rest == ".proc") read_proc(e.path(), p, rep);
    else if (rest == ".names") read_names(e.path(), p, rep);
    else if (rest == ".cuda.started") p.info.used_cuda = true;
    else if (std::int64_t w = 0; cuda_part_window(rest, w)) {
      if (o.host_only) continue;
      p.cuda_files[w] = e.path();
      p.info.cuda_records = true;
    } else if (rest == ".windows") {
      std::string text;
      if (read_text_file(e.path().string(), text).is_ok()) p.windows = parse_window_marks(text, pid, o.end_ns);
    } else if (rest.size() > 7 && rest.compare(rest.size() - 7, 7, ".ranges") == 0) {
      p.range_files.push_back(e.path());
    }
  }
  if (o.rank >= 0)  // a trace per rank: the other processes (the launcher, the other ranks) are left out
    std::erase_if(procs, [&](const auto& kv) { return kv.second.info.rank != o.rank; });
  return Status::ok();
}

// One merge: the parts of every process into `out`, a lane per thread. A stop (checked before each
// part) keeps what was merged so far.
class PartMerger {
 public:
  PartMerger(const RoleMap& roles, const MergeOptions& o, Trace& out, MergeReport& rep) : roles_(roles), o_(o), out_(out), rep_(rep) {}

  void ranges(std::int64_t pid, ProcessParts& p) {
    std::sort(p.range_files.begin(), p.range_files.end());
    for (const fs::path& f : p.range_files) {
      if (stopping()) break;
      ++merged_;
      const auto lane = static_cast<std::uint32_t>(out_.threads.size());
      std::int64_t tid = 0;
      std::uint64_t pthread = 0;
      if (Status st = read_ranges(f, p, roles_, o_, lane, out_, rep_, tid, pthread, out_.meta.cpu_time); !st.is_ok()) {
        rep_.unreadable_parts++;
        rep_.problems.push_back(st.message());
        continue;
      }
      auto tn = p.thread_names.find(tid);
      std::string name = tn != p.thread_names.end() ? tn->second : (tid == pid ? "main" : "thread");
      out_.threads.push_back(ThreadInfo{lane, tid, std::move(name), pthread, pid, p.info.command});
      lane_of_[{pid, static_cast<std::uint64_t>(tid)}] = lane;
      lane_of_[{pid, pthread & 0xffffffffull}] = lane;
      lane_of_[{pid, pthread}] = lane;
      p.info.threads++;
    }
  }

  // The process's CUPTI parts, one per window (or the whole run's). CUPTI numbers correlations afresh
  // after each detach: each window's ids move past the previous ones.
  void device(std::int64_t pid, ProcessParts& p) {
    if (p.info.cuda_records && stopping()) {
      p.info.cuda_records = false;  // not merged (the stop is reported once, by the caller)
      return;
    }
    if (!p.info.cuda_records) {
      if (p.info.used_cuda) rep_.problems.push_back(fmt::format("process {} used CUDA but wrote no device records (it did not exit normally)", pid));
      return;
    }
    std::uint64_t correlation_base = 0;
    for (const auto& [window, path] : p.cuda_files) {
      if (stopping()) break;
      ++merged_;
      Trace part;
      if (Status st = read_trace_file(path.string(), part); !st.is_ok()) {
        rep_.unreadable_parts++;
        rep_.problems.push_back(st.message());
        continue;
      }
      correlation_base += device_part(pid, p, part, correlation_base);
    }
  }

  bool stopping() {
    if (!rep_.merge_stopped && o_.should_stop && o_.should_stop()) rep_.merge_stopped = true;
    return rep_.merge_stopped;
  }
  std::size_t merged() const { return merged_; }

 private:
  // One CUPTI part's calls and device records, their threads mapped to lanes; returns its highest
  // correlation id (the next part's base).
  std::uint64_t device_part(std::int64_t pid, ProcessParts& p, const Trace& part, std::uint64_t correlation_base) {
    out_.meta.cupti = out_.meta.cupti || part.meta.cupti;
    if (part.meta.device != "none") out_.meta.device = part.meta.device;
    out_.meta.dropped_device += part.meta.dropped_device;
    if (auto kept = part.meta.config.find(kCuptiKeptKey); kept != part.meta.config.end())
      out_.meta.config[kCuptiKeptKey] = fmt::format("pid {}: {}", pid, kept->second);
    std::vector<std::uint32_t> lane_map(part.threads.size());
    for (std::size_t i = 0; i < part.threads.size(); ++i) {
      const ThreadInfo& th = part.threads[i];
      auto lit = lane_of_.find({pid, static_cast<std::uint64_t>(th.os_tid)});
      if (lit == lane_of_.end()) {
        const auto lane = static_cast<std::uint32_t>(out_.threads.size());
        out_.threads.push_back(ThreadInfo{lane, th.os_tid, "cuda-thread", 0, pid, p.info.command});
        lit = lane_of_.emplace(std::make_pair(pid, static_cast<std::uint64_t>(th.os_tid)), lane).first;
        p.info.threads++;
      }
      lane_map[i] = lit->second;
    }
    std::uint64_t highest = 0;
    for (RuntimeCall c : part.calls) {
      highest = std::max(highest, c.correlation);
      if (impossible(c.begin_ns, c.end_ns, o_.end_ns)) {
        out_.meta.dropped_device++;
        continue;
      }
      c.thread = c.thread < lane_map.size() ? lane_map[c.thread] : 0;
      c.name = out_.intern(part.name(c.name));
      if (c.correlation != 0) c.correlation += correlation_base;
      out_.calls.push_back(c);
    }
    for (DeviceActivity a : part.activities) {
      highest = std::max(highest, a.correlation);
      if (impossible(a.begin_ns, a.end_ns, o_.end_ns)) {
        out_.meta.dropped_device++;
        continue;
      }
      a.name = out_.intern(part.name(a.name));
      if (a.correlation != 0) a.correlation += correlation_base;
      out_.activities.push_back(a);
    }
    return highest;
  }

  const RoleMap& roles_;
  const MergeOptions& o_;
  Trace& out_;
  MergeReport& rep_;
  std::map<std::pair<std::int64_t, std::uint64_t>, std::uint32_t> lane_of_;  // (pid, tid or pthread) -> lane, for CUPTI's thread ids
  std::size_t merged_ = 0;
};

// A ring wrapped (record --sample): the records from before its oldest kept range go, every thread's
// and the device's, so that the trace is whole from its horizon on. Counted, and said in the trace.
void leave_out_before_horizon(Trace& out, MergeReport& rep) {
  const std::int64_t h = rep.ring_horizon_ns;
  if (h <= 0) return;
  const auto before = [h](const auto& x) { return x.begin_ns < h; };
  const std::size_t n = out.ranges.size() + out.calls.size() + out.activities.size();
  std::erase_if(out.ranges, before);
  std::erase_if(out.calls, before);
  std::erase_if(out.activities, before);
  rep.before_horizon = n - out.ranges.size() - out.calls.size() - out.activities.size();
  out.meta.config[kHostRingKey] = fmt::format(
      "per-thread rings of {} ranges wrapped: {} oldest ranges overwritten, {} records from before the newest wrap point left out",
      rep.ring_capacity, rep.overwritten, rep.before_horizon);
}

std::int64_t earliest_record(const Trace& t) {
  std::int64_t origin = INT64_MAX;
  for (const HostRange& r : t.ranges) origin = std::min(origin, r.begin_ns);
  for (const RuntimeCall& c : t.calls) origin = std::min(origin, c.begin_ns);
  for (const DeviceActivity& a : t.activities) origin = std::min(origin, a.begin_ns);
  return origin == INT64_MAX ? 0 : origin;
}

}  // namespace

Status merge_parts(const std::string& dir, const RoleMap& roles, const MergeOptions& o, Trace& out, MergeReport& rep) {
  out = Trace{};
  rep = MergeReport{};
  std::map<std::int64_t, ProcessParts> procs;
  if (Status st = scan_parts(dir, o, procs, rep); !st.is_ok()) return st;
  out.meta.host = true;
  out.meta.nvtx = true;
  out.meta.device = "none";
  out.meta.config["recorded"] = "true";
  std::size_t parts = 0;
  for (const auto& [pid, p] : procs) parts += p.range_files.size() + p.cuda_files.size();
  PartMerger merger(roles, o, out, rep);
  for (auto& [pid, p] : procs) merger.ranges(pid, p);
  for (auto& [pid, p] : procs) merger.device(pid, p);
  leave_out_before_horizon(out, rep);
  std::vector<StepMark> marks;
  note_windows(procs, out, rep, marks);
  const std::optional<std::uint32_t> worker_start = out.names.find(kPythonWorkerStartName);
  std::map<std::int64_t, std::set<std::int64_t>> batches_of;  // pid -> batches its producer ranges name
  for (const HostRange& r : out.ranges) {
    const std::int64_t pid = out.threads[r.thread].pid;
    RecordedProcess& info = procs[pid].info;
    info.ranges++;
    info.loader_worker = info.loader_worker || r.name == worker_start;
    if (r.role == Role::retrieval || r.role == Role::decode || r.role == Role::collate) batches_of[pid].insert(r.batch);
  }
  for (auto& [pid, batches] : batches_of) procs[pid].info.batches_made = batches.size();
  for (auto& [pid, p] : procs) rep.processes.push_back(p.info);
  if (rep.merge_stopped) {
    rep.problems.push_back(fmt::format("the merge was interrupted: {} of {} part files merged; the rest stay in {}", merger.merged(), parts, dir));
    out.meta.interrupted = true;
    out.meta.config["merge"] = fmt::format("interrupted: {} of {} part files merged", merger.merged(), parts);
  }
  rep.steps = infer_steps(out);
  rep.demoted_steps = assign_steps(out, rep.ring_horizon_ns > 0 ? &marks : nullptr);
  out.meta.dropped_host = rep.dropped;
  out.meta.origin_ns = earliest_record(out);
  return Status::ok();
}

}  // namespace stalldx::record
