#include "stalldx/record/merge.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <unordered_map>

#include "stalldx/record/part_format.h"
#include "stalldx/record/sampling.h"
#include "stalldx/record/step_inference.h"
#include "stalldx/text.h"
#include "stalldx/trace_io.h"

namespace stalldx::record {

namespace fs = std::filesystem;

namespace {

std::string unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char c = s[++i];
      out += c == 't' ? '\t' : c == 'n' ? '\n' : c;
    } else {
      out += s[i];
    }
  }
  return out;
}

template <typename T>
bool parse_int(std::string_view s, T& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

struct ProcessParts {
  RecordedProcess info;
  std::unordered_map<std::uint32_t, std::string> names, domains;
  std::unordered_map<std::int64_t, std::string> thread_names;
  std::vector<fs::path> range_files;
  std::map<std::int64_t, fs::path> cuda_files;  // window number -> CUPTI part (-1: the whole run's)
  std::optional<WindowMarks> windows;           // sampled: the device windows it marked
};

// "<pid>.cuda.json" -> -1, "<pid>.cuda.w7.json" -> 7; false for any other name.
bool cuda_part_window(std::string_view rest, std::int64_t& window) {
  if (rest == ".cuda.json") {
    window = -1;
    return true;
  }
  constexpr std::string_view pre = ".cuda.w", post = ".json";
  if (rest.size() <= pre.size() + post.size() || rest.substr(0, pre.size()) != pre || rest.substr(rest.size() - post.size()) != post)
    return false;
  return parse_int(rest.substr(pre.size(), rest.size() - pre.size() - post.size()), window) && window >= 0;
}

void read_names(const fs::path& path, ProcessParts& p, MergeReport& rep) {
  std::string text;
  if (!read_text_file(path.string(), text).is_ok()) {
    rep.problems.push_back(fmt::format("{}: unreadable", path.string()));
    return;
  }
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) break;  // a line cut by a kill: ignored
    std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    const auto t1 = line.find('\t');
    const auto t2 = t1 == std::string_view::npos ? t1 : line.find('\t', t1 + 1);
    if (t1 != 1 || t2 == std::string_view::npos) continue;
    const char kind = line[0];
    std::int64_t id = 0;
    if (!parse_int(line.substr(2, t2 - 2), id)) continue;
    std::string value = to_valid_utf8(unescape(line.substr(t2 + 1)), &rep.non_utf8_bytes);
    if (kind == 'n') p.names[static_cast<std::uint32_t>(id)] = std::move(value);
    else if (kind == 'd') p.domains[static_cast<std::uint32_t>(id)] = std::move(value);
    else if (kind == 't') p.thread_names[id] = std::move(value);
    else if (kind == 'h') p.info.python_hook += (p.info.python_hook.empty() ? "" : "; ") + value;
    else if (kind == 'r' && id >= 0 && id < (1 << 24)) {
      const auto tab = value.find('\t');
      int size = 0;
      if (parse_int(std::string_view(value).substr(0, tab), size) && size > id) {
        p.info.rank = static_cast<int>(id);
        p.info.world_size = size;
        p.info.job = tab == std::string::npos ? std::string() : value.substr(tab + 1);
      }
    }
  }
}

void read_proc(const fs::path& path, ProcessParts& p, MergeReport& rep) {
  std::string text;
  if (!read_text_file(path.string(), text).is_ok()) return;
  const auto t1 = text.find('\t');
  const auto t2 = t1 == std::string::npos ? t1 : text.find('\t', t1 + 1);
  if (t2 == std::string::npos) return;
  parse_int(std::string_view(text).substr(t1 + 1, t2 - t1 - 1), p.info.ppid);
  p.info.command = to_valid_utf8(text.substr(t2 + 1), &rep.non_utf8_bytes);
  while (!p.info.command.empty() && p.info.command.back() == '\n') p.info.command.pop_back();
}

// Reads one thread's range file into `t` (lane `lane`). Only the records the header publishes count.
// A time no recording can hold: not after its begin, or (the recording's end known) after that end —
// CLOCK_MONOTONIC never runs ahead of the merge. Such records are dropped and counted, never summed.
bool impossible(std::int64_t begin_ns, std::int64_t end_ns, std::int64_t recording_end_ns) {
  constexpr std::int64_t kSlackNs = 60'000'000'000;  // a minute: the end is taken after the command exits
  if (begin_ns <= 0 || end_ns < begin_ns) return true;
  return recording_end_ns > 0 && end_ns > recording_end_ns + kSlackNs;
}

Status read_ranges(const fs::path& path, const ProcessParts& p, const RoleMap& roles, const MergeOptions& o, std::uint32_t lane,
                   Trace& t, MergeReport& rep, std::int64_t& tid, std::uint64_t& pthread, bool& any_cpu) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return Status::io(fmt::format("{}: cannot open", path.string()));
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) < sizeof(PartHeader)) {
    ::close(fd);
    return Status::parse(fmt::format("{}: shorter than its header", path.string()));
  }
  const std::size_t bytes = static_cast<std::size_t>(st.st_size);
  void* m = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) return Status::io(fmt::format("{}: cannot map", path.string()));
  const auto* h = static_cast<const PartHeader*>(m);
  Status result = Status::ok();
  if (h->magic != kPartMagic || h->version != kPartVersion || h->record_size != sizeof(PartRange)) {
    result = Status::parse(fmt::format("{}: not a stalldx range part (magic/version)", path.string()));
  } else {
    tid = h->tid;
    pthread = h->pthread_id;
    const std::uint64_t fits = (bytes - sizeof(PartHeader)) / sizeof(PartRange);
    const std::uint64_t n = std::min<std::uint64_t>(h->count, fits);
    rep.dropped += h->dropped;
    rep.unbalanced_pops += h->unbalanced_pops;
    const auto* recs = reinterpret_cast<const PartRange*>(h + 1);
    // Per distinct (name, domain) of this part: its interned id and role, matched once.
    struct Known {
      std::uint32_t id;
      Role role;
    };
    std::unordered_map<std::uint64_t, Known> known;
    for (std::uint64_t i = 0; i < n; ++i) {
      const PartRange& r = recs[i];
      if (r.begin_ns <= 0) continue;
      if (o.since_ns > 0 && r.end_ns != 0 && r.end_ns < o.since_ns) continue;  // a live snapshot's older ranges
      if (impossible(r.begin_ns, r.end_ns == 0 ? r.begin_ns : r.end_ns, o.end_ns)) {  // a corrupt or forged part: dropped, counted
        rep.dropped++;
        continue;
      }
      HostRange out;
      out.begin_ns = r.begin_ns;
      out.end_ns = r.end_ns;
      if (out.end_ns == 0) {  // never closed: ends when the recording ended (its CPU fields hold begin values)
        rep.unclosed++;
        out.end_ns = std::max(o.end_ns, out.begin_ns);
      } else if (r.kind != PartRangeKind::start_end) {
        out.cpu_ns = r.cpu_ns >= 0 ? std::min(r.cpu_ns, r.end_ns - r.begin_ns) : -1;
        out.runq_ns = r.runq_ns >= 0 ? std::min(r.runq_ns, r.end_ns - r.begin_ns) : -1;
        any_cpu = any_cpu || out.cpu_ns >= 0;
      }
      if (out.end_ns < out.begin_ns) continue;
      out.thread = lane;
      out.batch = r.payload >= 0 ? r.payload : -1;
      const std::uint64_t key = (std::uint64_t{r.name} << 32) | r.domain;
      auto [it, fresh] = known.emplace(key, Known{});
      if (fresh) {
        auto nit = p.names.find(r.name);
        const std::string& name = nit == p.names.end() ? std::string() : nit->second;
        auto dit = p.domains.find(r.domain);
        const std::string domain = dit == p.domains.end() ? std::string() : dit->second;
        it->second.id = t.intern(name.empty() ? fmt::format("nvtx#{}", r.name) : name);
        const bool own = domain == kStalldxDomain && r.category >= 1 && r.category <= static_cast<std::uint32_t>(kRoleCount);
        if (!o.step.empty() && o.step.found_in(name)) it->second.role = Role::step;
        else if (own) it->second.role = static_cast<Role>(r.category - 1);  // stalldx's own NVTX (mirror, Python hook): the category is the role
        else it->second.role = roles.match(name, domain).value_or(Role::user);
      }
      out.name = it->second.id;
      out.role = it->second.role;
      t.ranges.push_back(out);
      rep.ranges++;
    }
  }
  munmap(m, bytes);
  return result;
}

}  // namespace

namespace {
// A sampled recording's windows into the trace's metadata (sampling.h). A process that ran CUDA keeps
// the windows whose records exist (the cap removes old ones; a window may close before cuInit); where
// no process ran CUDA (a program marking steps with no device, tests), those that marked steps keep all.
void note_windows(const std::map<std::int64_t, ProcessParts>& procs, Trace& out, MergeReport& rep) {
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
    for (const auto& [n, w] : p.windows->windows) {
      if (p.info.used_cuda && !p.cuda_files.count(n)) {
        rep.windows_without_records++;
        continue;
      }
      kept.push_back(w);
    }
  }
  if (!any) return;
  rep.device_windows = kept.size();
  rep.sample_plan = plan.value_or(SamplePlan{});
  set_device_windows(out.meta, rep.sample_plan, kept);
  if (rep.windows_without_records > 0) out.meta.config["device_windows_without_records"] = std::to_string(rep.windows_without_records);
}
}  // namespace

Status merge_parts(const std::string& dir, const RoleMap& roles, const MergeOptions& o, Trace& out, MergeReport& rep) {
  out = Trace{};
  rep = MergeReport{};
  std::map<std::int64_t, ProcessParts> procs;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return Status::io(fmt::format("{}: {}", dir, ec.message()));
  for (const fs::directory_entry& e : it) {
    const std::string f = e.path().filename().string();
    // Only regular files: a FIFO planted there would block the merge, a link would read elsewhere.
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
    }
    else if (rest.size() > 7 && rest.compare(rest.size() - 7, 7, ".ranges") == 0) p.range_files.push_back(e.path());
  }
  if (o.rank >= 0)  // a trace per rank: the other processes (the launcher, the other ranks) are left out
    std::erase_if(procs, [&](const auto& kv) { return kv.second.info.rank != o.rank; });
  out.meta.host = true;
  out.meta.nvtx = true;
  out.meta.device = "none";
  out.meta.config["recorded"] = "true";
  // (pid, tid) and (pid, pthread) -> lane, for CUPTI's thread ids.
  std::map<std::pair<std::int64_t, std::uint64_t>, std::uint32_t> lane_of;
  std::size_t parts = 0, merged = 0;
  for (const auto& [pid, p] : procs) parts += p.range_files.size() + p.cuda_files.size();
  // Checked before each part: a stop keeps what was merged so far (and says so).
  auto stopping = [&] {
    if (!rep.merge_stopped && o.should_stop && o.should_stop()) rep.merge_stopped = true;
    return rep.merge_stopped;
  };
  for (auto& [pid, p] : procs) {
    std::sort(p.range_files.begin(), p.range_files.end());
    for (const fs::path& f : p.range_files) {
      if (stopping()) break;
      ++merged;
      const auto lane = static_cast<std::uint32_t>(out.threads.size());
      std::int64_t tid = 0;
      std::uint64_t pthread = 0;
      if (Status st = read_ranges(f, p, roles, o, lane, out, rep, tid, pthread, out.meta.cpu_time); !st.is_ok()) {
        rep.unreadable_parts++;
        rep.problems.push_back(st.message());
        continue;
      }
      auto tn = p.thread_names.find(tid);
      std::string name = tn != p.thread_names.end() ? tn->second : (tid == pid ? "main" : "thread");
      out.threads.push_back(ThreadInfo{lane, tid, std::move(name), pthread, pid, p.info.command});
      lane_of[{pid, static_cast<std::uint64_t>(tid)}] = lane;
      lane_of[{pid, pthread & 0xffffffffull}] = lane;
      lane_of[{pid, pthread}] = lane;
      p.info.threads++;
    }
  }
  for (auto& [pid, p] : procs) {
    if (p.info.cuda_records && stopping()) {
      p.info.cuda_records = false;  // not merged (the stop is reported once, below)
      continue;
    }
    if (!p.info.cuda_records) {
      if (p.info.used_cuda)
        rep.problems.push_back(fmt::format("process {} used CUDA but wrote no device records (it did not exit normally)", pid));
      continue;
    }
    // CUPTI numbers correlations afresh after each detach: each window's ids move past the previous ones.
    std::uint64_t correlation_base = 0;
    for (const auto& [window, path] : p.cuda_files) {
    if (stopping()) break;
    ++merged;
    Trace part;
    if (Status st = read_trace_file(path.string(), part); !st.is_ok()) {
      rep.unreadable_parts++;
      rep.problems.push_back(st.message());
      continue;
    }
    out.meta.cupti = out.meta.cupti || part.meta.cupti;
    if (part.meta.device != "none") out.meta.device = part.meta.device;
    out.meta.dropped_device += part.meta.dropped_device;
    std::vector<std::uint32_t> lane_map(part.threads.size());
    for (std::size_t i = 0; i < part.threads.size(); ++i) {
      const ThreadInfo& th = part.threads[i];
      auto lit = lane_of.find({pid, static_cast<std::uint64_t>(th.os_tid)});
      if (lit == lane_of.end()) {
        const auto lane = static_cast<std::uint32_t>(out.threads.size());
        out.threads.push_back(ThreadInfo{lane, th.os_tid, "cuda-thread", 0, pid, p.info.command});
        lit = lane_of.emplace(std::make_pair(pid, static_cast<std::uint64_t>(th.os_tid)), lane).first;
        p.info.threads++;
      }
      lane_map[i] = lit->second;
    }
    for (RuntimeCall c : part.calls) {
      if (impossible(c.begin_ns, c.end_ns, o.end_ns)) {
        out.meta.dropped_device++;
        continue;
      }
      c.thread = c.thread < lane_map.size() ? lane_map[c.thread] : 0;
      c.name = out.intern(part.name(c.name));
      if (c.correlation != 0) c.correlation += correlation_base;
      out.calls.push_back(c);
    }
    std::uint64_t highest = 0;
    for (const RuntimeCall& c : part.calls) highest = std::max(highest, c.correlation);
    for (DeviceActivity a : part.activities) {
      highest = std::max(highest, a.correlation);
      if (impossible(a.begin_ns, a.end_ns, o.end_ns)) {
        out.meta.dropped_device++;
        continue;
      }
      a.name = out.intern(part.name(a.name));
      if (a.correlation != 0) a.correlation += correlation_base;
      out.activities.push_back(a);
    }
    correlation_base += highest;
    }
  }
  note_windows(procs, out, rep);
  for (const HostRange& r : out.ranges) procs[out.threads[r.thread].pid].info.ranges++;
  for (auto& [pid, p] : procs) rep.processes.push_back(p.info);
  if (rep.merge_stopped) {
    rep.problems.push_back(fmt::format("the merge was interrupted: {} of {} part files merged; the rest stay in {}", merged, parts, dir));
    out.meta.interrupted = true;
    out.meta.config["merge"] = fmt::format("interrupted: {} of {} part files merged", merged, parts);
  }
  rep.steps = infer_steps(out);
  rep.demoted_steps = assign_steps(out);
  out.meta.dropped_host = rep.dropped;
  std::int64_t origin = INT64_MAX;
  for (const HostRange& r : out.ranges) origin = std::min(origin, r.begin_ns);
  for (const RuntimeCall& c : out.calls) origin = std::min(origin, c.begin_ns);
  for (const DeviceActivity& a : out.activities) origin = std::min(origin, a.begin_ns);
  out.meta.origin_ns = origin == INT64_MAX ? 0 : origin;
  return Status::ok();
}

}  // namespace stalldx::record
