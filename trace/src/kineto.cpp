// Kineto JSON on simdjson's DOM parser (Debian's libsimdjson: a 100k-event trace parses in tens of ms,
// where a general JSON DOM takes a second).
#include "stalldx/record/kineto.h"

#include "kineto_job.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

#include "json_runs.h"
#include "stalldx/cuda_api.h"
#include "stalldx/record/merge.h"
#include "stalldx/trace_io.h"

namespace stalldx::record {

namespace {

using simdjson::dom::element;
using simdjson::dom::object;

enum class Cat { cpu_op, annotation, runtime, kernel, memcpy, memset, ignored, unknown };

Cat category(std::string_view c) {
  if (c == "cpu_op" || c == "Operator" || c == "operator") return Cat::cpu_op;
  if (c == "user_annotation" || c == "User annotation") return Cat::annotation;
  if (c == "cuda_runtime" || c == "cuda_driver" || c == "Runtime" || c == "Driver") return Cat::runtime;
  if (c == "kernel" || c == "Kernel") return Cat::kernel;
  if (c == "gpu_memcpy" || c == "Memcpy") return Cat::memcpy;
  if (c == "gpu_memset" || c == "Memset") return Cat::memset;
  if (c == "ac2g" || c == "fwdbwd" || c == "python_function" || c == "overhead" || c == "Trace" || c == "gpu_user_annotation" ||
      c == "cuda_sync" || c == "Python" || c == "Memory" || c == "cpu_instant_event" || c == "gpu_user_annotation" || c == "ProfilerStep")
    return Cat::ignored;
  return Cat::unknown;
}

// "Memcpy HtoD (Pinned -> Device)": direction and host memory kind from the name.
void memcpy_kind(std::string_view name, ActivityKind& kind, MemKind& host) {
  kind = ActivityKind::memcpy_other;
  if (name.find("HtoD") != std::string_view::npos) kind = ActivityKind::memcpy_h2d;
  else if (name.find("DtoH") != std::string_view::npos) kind = ActivityKind::memcpy_d2h;
  else if (name.find("DtoD") != std::string_view::npos) kind = ActivityKind::memcpy_d2d;
  host = MemKind::unknown;
  if (name.find("Pageable") != std::string_view::npos) host = MemKind::pageable;
  else if (name.find("Pinned") != std::string_view::npos) host = MemKind::pinned;
  else if (name.find("Managed") != std::string_view::npos) host = MemKind::managed;
  else if (kind == ActivityKind::memcpy_d2d) host = MemKind::device;
}

std::int64_t to_ns(double us) { return static_cast<std::int64_t>(std::llround(us * 1000.0)); }

std::int64_t int_arg(const element& args, const char* key, std::int64_t fallback) {
  auto v = args[key];
  if (v.error()) return fallback;
  if (auto i = v.get_int64(); !i.error()) return i.value();
  if (auto u = v.get_uint64(); !u.error()) return static_cast<std::int64_t>(u.value());
  if (auto d = v.get_double(); !d.error()) return static_cast<std::int64_t>(d.value());
  return fallback;
}

bool is_copy_call(std::string_view n) { return api_kind(n) == ApiKind::copy; }
bool is_sync_call(std::string_view n) {
  const ApiKind k = api_kind(n);
  return k == ApiKind::synchronize || k == ApiKind::copy;  // a D2H copy waits for the device
}

struct PendingRange {
  HostRange range;
  bool is_op = false;  // a CPU op (its submit/sync role must be earned by a CUDA call inside it)
};

}  // namespace

bool looks_like_kineto(const std::string& text) {
  const std::string_view head(text.data(), std::min<std::size_t>(text.size(), 8192));
  return head.find("\"schemaVersion\"") != std::string_view::npos || head.find("\"deviceProperties\"") != std::string_view::npos ||
         head.find("\"baseTimeNanoseconds\"") != std::string_view::npos || head.find("\"distributedInfo\"") != std::string_view::npos;
}

namespace {

// Kineto's writer puts `"traceEvents": [` on a line of its own, then each event as a block from `  {` to
// `  }` (events separated by `,` + newline; its strings escape their newlines) and closes with `  ]`: that
// layout is read in runs of events (json_runs.h). The range of the events, or nothing when the text is
// not in that layout.
std::optional<std::string_view> kineto_layout_events(const std::string& text) {
  constexpr std::string_view open_text = "\"traceEvents\": [\n", close_text = "\n  ]";
  const std::string_view all(text);
  const std::size_t open = all.find(open_text);
  const std::size_t close = open == std::string_view::npos ? open : all.rfind(close_text);
  if (open == std::string_view::npos || close == std::string_view::npos || close < open + open_text.size()) return std::nullopt;
  return all.substr(open + open_text.size(), close - open - open_text.size());
}

// in_runs: read Kineto's own layout in runs when the text has it; anything that does not parse that way
// is read again as one document, whose parser names the problem.
Status read_kineto(const std::string& text, const RoleMap& roles, Trace& out, KinetoReport& rep, bool in_runs) {
  out = Trace{};
  rep = KinetoReport{};
  simdjson::dom::parser parser;
  simdjson::dom::array events;
  const std::optional<std::string_view> laid_out = in_runs ? kineto_layout_events(text) : std::nullopt;
  if (!laid_out) {
    element doc;
    // parse() reads in place when the string's capacity holds simdjson's padding (read_text_file's does).
    if (auto err = parser.parse(text).get(doc); err)
      return Status::parse(fmt::format("not a complete JSON document ({}): a trace cut short, or not a trace", simdjson::error_message(err)));
    if (doc["traceEvents"].get_array().get(events))
      return Status::parse("a Kineto trace without a 'traceEvents' array");
  }

  // Lanes: one per (pid, tid) of host events; names from the M events.
  std::map<std::pair<std::int64_t, std::int64_t>, std::uint32_t> lane_of;
  std::map<std::int64_t, std::string> process_names;
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> thread_names;
  const auto lane = [&](std::int64_t pid, std::int64_t tid) {
    auto [it, fresh] = lane_of.emplace(std::make_pair(pid, tid), static_cast<std::uint32_t>(out.threads.size()));
    if (fresh) out.threads.push_back(ThreadInfo{it->second, tid, "thread", 0, pid, ""});
    return it->second;
  };
  std::vector<PendingRange> ranges;
  double first_ts = std::numeric_limits<double>::infinity();
  std::vector<HostRange> folded;  // CPU ops with no role
  // Per distinct name: its id and role, looked up by string_view (no allocation per event).
  struct NameInfo {
    std::uint32_t id;
    std::optional<Role> role;
  };
  TextMap<NameInfo> names;
  const auto info = [&](std::string_view n) -> const NameInfo& {
    auto it = names.find(n);
    if (it != names.end()) return it->second;
    return names.emplace(std::string(n), NameInfo{out.intern(n), roles.match(std::string(n), "")}).first->second;
  };
  const auto intern = [&](std::string_view n) { return info(n).id; };
  const auto role_of = [&](std::string_view n) { return info(n).role; };

  const auto on_event = [&](const element& ev) {
    rep.events++;
    object o;
    if (ev.get_object().get(o)) { rep.not_understood++; return; }
    std::string_view ph, cat, name;
    if (o["ph"].get_string().get(ph)) { rep.not_understood++; return; }
    {  // Perfetto shows times from the earliest event of any kind: our origin is the same
      double any_ts = 0;
      if (!o["ts"].get_double().get(any_ts) && std::isfinite(any_ts)) first_ts = std::min(first_ts, any_ts);
    }
    if (ph == "M") {
      std::string_view what, value;
      const std::int64_t pid = int_arg(ev, "pid", 0), tid = int_arg(ev, "tid", 0);
      if (!o["name"].get_string().get(what) && !ev["args"]["name"].get_string().get(value)) {
        if (what == "process_name") process_names[pid] = std::string(value);
        else if (what == "thread_name") thread_names[{pid, tid}] = std::string(value);
      }
      rep.ignored++;
      return;
    }
    if (ph != "X") {
      rep.ignored += (ph == "s" || ph == "f" || ph == "i" || ph == "I" || ph == "C") ? 1 : 0;
      rep.not_understood += (ph == "s" || ph == "f" || ph == "i" || ph == "I" || ph == "C") ? 0 : 1;
      return;
    }
    if (o["cat"].get_string().get(cat)) cat = {};
    if (o["name"].get_string().get(name)) name = {};
    double ts = 0, dur = 0;
    if (o["ts"].get_double().get(ts)) {
      std::int64_t its = 0;
      if (o["ts"].get_int64().get(its)) { rep.not_understood++; return; }
      ts = static_cast<double>(its);
    }
    if (o["dur"].get_double().get(dur)) {
      std::int64_t idur = 0;
      if (!o["dur"].get_int64().get(idur)) dur = static_cast<double>(idur);
    }
    if (!(dur >= 0) || !std::isfinite(ts)) { rep.not_understood++; return; }
    const std::int64_t begin = to_ns(ts), end = to_ns(ts + dur);
    element args;
    const bool has_args = !o["args"].get(args);
    const std::int64_t pid = int_arg(ev, "pid", 0), tid = int_arg(ev, "tid", 0);
    const Cat c = category(cat);
    switch (c) {
      case Cat::cpu_op:
      case Cat::annotation: {
        const std::optional<Role> role = role_of(name);
        if (c == Cat::cpu_op && !role) {
          // Kept aside: inside a single-process loader's wait they are the loader's CPU work.
          folded.push_back(HostRange{begin, end, lane(pid, tid), intern(name), Role::decode});
          break;
        }
        PendingRange p;
        p.range.begin_ns = begin;
        p.range.end_ns = end;
        p.range.thread = lane(pid, tid);
        p.range.name = intern(name);
        p.range.role = role.value_or(Role::user);
        p.is_op = c == Cat::cpu_op;
        ranges.push_back(p);
        break;
      }
      case Cat::runtime: {
        RuntimeCall call;
        call.begin_ns = begin;
        call.end_ns = end;
        call.thread = lane(pid, tid);
        call.name = intern(name);
        call.correlation = has_args ? static_cast<std::uint64_t>(int_arg(args, "correlation", 0)) : 0;
        out.calls.push_back(call);
        rep.calls++;
        break;
      }
      case Cat::kernel:
      case Cat::memcpy:
      case Cat::memset: {
        DeviceActivity a;
        a.begin_ns = begin;
        a.end_ns = end;
        a.name = intern(name);
        a.kind = c == Cat::kernel ? ActivityKind::kernel : c == Cat::memset ? ActivityKind::memset : ActivityKind::memcpy_other;
        if (c == Cat::memcpy) memcpy_kind(name, a.kind, a.host_mem);
        if (has_args) {
          a.device = static_cast<std::int32_t>(int_arg(args, "device", 0));
          a.stream = static_cast<std::uint32_t>(int_arg(args, "stream", tid));
          a.correlation = static_cast<std::uint64_t>(int_arg(args, "correlation", 0));
          a.bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, int_arg(args, "bytes", 0)));
        }
        out.activities.push_back(a);
        rep.device++;
        break;
      }
      case Cat::ignored: rep.ignored++; break;
      case Cat::unknown: rep.not_understood++; break;
    }
  };
  if (laid_out) {
    JsonRuns runs;
    if (!runs.for_each(*laid_out, "\n  },\n", 4, on_event)) return read_kineto(text, roles, out, rep, false);
    rep.runs = runs.runs();
  } else {
    for (element ev : events) on_event(ev);
  }

  // A copy / sync op earns its role by a CUDA call inside it on its thread; otherwise its time stays
  // with its parent (a Dataset's aten::copy_ on CPU tensors is not a transfer).
  std::unordered_map<std::uint32_t, std::vector<const RuntimeCall*>> calls_on;
  for (const RuntimeCall& c : out.calls) calls_on[c.thread].push_back(&c);
  for (auto& [th, v] : calls_on) std::sort(v.begin(), v.end(), [](const RuntimeCall* a, const RuntimeCall* b) { return a->begin_ns < b->begin_ns; });
  const auto issued = [&](const HostRange& r, bool (*pred)(std::string_view)) {
    auto it = calls_on.find(r.thread);
    if (it == calls_on.end()) return false;
    auto c = std::lower_bound(it->second.begin(), it->second.end(), r.begin_ns,
                              [](const RuntimeCall* x, std::int64_t v) { return x->begin_ns < v; });
    for (; c != it->second.end() && (*c)->begin_ns < r.end_ns; ++c)
      if (pred(out.name((*c)->name))) return true;
    return false;
  };
  for (PendingRange& p : ranges) {
    if (p.is_op && p.range.role == Role::submit && !issued(p.range, &is_copy_call)) { rep.folded_ops++; continue; }
    if (p.is_op && p.range.role == Role::sync && !issued(p.range, &is_sync_call)) { rep.folded_ops++; continue; }
    out.ranges.push_back(p.range);
  }
  // num_workers=0: the loader runs inside the wait on the loop's own thread; its CPU ops there are the
  // loader's decode/transform work (what is left of the wait — Python file reads, collation — stays
  // unsplit). Elsewhere CPU ops with no role fold into their parents.
  {
    std::unordered_map<std::uint32_t, std::vector<const HostRange*>> waits;
    for (const HostRange& r : out.ranges)
      if (r.role == Role::wait_batch) waits[r.thread].push_back(&r);
    for (auto& [th, v] : waits) std::sort(v.begin(), v.end(), [](const HostRange* a, const HostRange* b) { return a->begin_ns < b->begin_ns; });
    std::vector<HostRange> loader_ops;
    for (const HostRange& op : folded) {
      auto it = waits.find(op.thread);
      bool inside = false;
      if (it != waits.end()) {
        auto w = std::upper_bound(it->second.begin(), it->second.end(), op.begin_ns,
                                  [](std::int64_t v, const HostRange* r) { return v < r->begin_ns; });
        inside = w != it->second.begin() && op.end_ns <= (*std::prev(w))->end_ns;
      }
      if (inside) loader_ops.push_back(op);
      else rep.folded_ops++;
    }
    rep.loader_ops = loader_ops.size();
    out.ranges.insert(out.ranges.end(), loader_ops.begin(), loader_ops.end());
  }
  rep.host_ranges = out.ranges.size();

  for (ThreadInfo& th : out.threads) {
    auto pn = process_names.find(th.pid);
    if (pn != process_names.end()) th.process = pn->second;
    auto tn = thread_names.find({th.pid, th.os_tid});
    th.name = tn != thread_names.end() ? tn->second : fmt::format("thread {}", th.os_tid);
  }

  // Steps, then the host work of each step that no annotation covers: in a PyTorch loop the main thread
  // is waiting for data, synchronizing, or issuing the step's device work — a step-long `submit` range
  // under the mapped ones (innermost wins) says the last.
  infer_steps(out);
  const std::uint64_t demoted = assign_steps(out);
  std::map<std::int64_t, std::int64_t> launches_in_step;
  for (const RuntimeCall& c : out.calls)
    if (c.step >= 0) launches_in_step[c.step]++;
  std::vector<HostRange> host_work;
  int step_ranges = 0;
  std::int64_t first_step_thread = -1;
  for (const HostRange& r : out.ranges)
    if (r.role == Role::step && r.step >= 0) {
      ++step_ranges;
      first_step_thread = r.thread;
      if (launches_in_step[r.step] > 0) {
        HostRange w = r;  // strictly inside the step, so that it is the innermost range where nothing else is
        w.begin_ns += 1;
        w.end_ns = std::max(w.begin_ns, w.end_ns - 1);
        w.role = Role::submit;
        w.name = out.intern("host work between annotated phases (op dispatch, Python)");
        host_work.push_back(w);
      }
    }
  out.ranges.insert(out.ranges.end(), host_work.begin(), host_work.end());

  out.meta.host = true;
  out.meta.cupti = rep.device > 0 || rep.calls > 0;
  out.meta.device = "CUDA (torch.profiler trace)";
  out.meta.config["source"] = "torch.profiler";
  read_kineto_job(text, laid_out, out.meta);
  out.meta.skipped_events = rep.not_understood;
  std::int64_t origin = std::isfinite(first_ts) ? to_ns(first_ts) : INT64_MAX;
  for (const HostRange& r : out.ranges) origin = std::min(origin, r.begin_ns);
  for (const DeviceActivity& a : out.activities) origin = std::min(origin, a.begin_ns);
  out.meta.origin_ns = origin == INT64_MAX ? 0 : origin;

  if (step_ranges == 0)
    rep.notes.push_back("no ProfilerStep#N ranges: profile with a schedule and call prof.step() every iteration, so each step is a range");
  if (rep.device == 0)
    rep.notes.push_back("no GPU events (a CPU-only profile, or CUDA activity off): profile with ProfilerActivity.CUDA to judge stalls against the device");
  std::map<std::int64_t, int> step_pids;
  for (const HostRange& r : out.ranges)
    if (r.role == Role::user && r.step < 0 && out.name(r.name).rfind("ProfilerStep#", 0) == 0) step_pids[out.threads[r.thread].pid]++;
  if (demoted > 0 && first_step_thread >= 0)
    rep.notes.push_back(fmt::format("steps of {} other thread(s)/process(es) set aside ({} step ranges): one trace per rank — diagnosing pid {} only",
                                    step_pids.size() + (step_pids.empty() ? 1 : 0), demoted,
                                    out.threads[static_cast<std::size_t>(first_step_thread)].pid));
  bool single_process = false, multi_process = false;
  for (const HostRange& r : out.ranges) {
    const std::string& n = out.name(r.name);
    single_process = single_process || (r.role == Role::wait_batch && n.find("SingleProcess") != std::string::npos);
    multi_process = multi_process || (r.role == Role::wait_batch && n.find("MultiProcessing") != std::string::npos);
  }
  if (multi_process)
    rep.notes.push_back("DataLoader workers are other processes, absent from torch.profiler traces: a wait on the loader is input-bound, "
                        "split unknown (annotate __getitem__ and run under `stalldx record`, or profile with num_workers=0)");
  if (single_process && rep.loader_ops > 0)
    rep.notes.push_back(fmt::format("num_workers=0: the loader's {} CPU ops inside the waits count as decode work; the rest of each wait "
                                    "(Python file reads, collation) stays unsplit — record_function(\"read_file\") in __getitem__ splits it",
                                    rep.loader_ops));
  return Status::ok();
}

}  // namespace

Status read_kineto_json(const std::string& text, const RoleMap& roles, Trace& out, KinetoReport& rep) {
  return read_kineto(text, roles, out, rep, true);
}

Status read_any_trace(const std::string& path, const RoleMap& roles, Trace& out, KinetoReport& report, bool& was_kineto) {
  std::string text;
  if (Status st = read_text_file(path, text); !st.is_ok()) return st;
  was_kineto = looks_like_kineto(text);
  if (was_kineto) return read_kineto_json(text, roles, out, report).prefixed(path);
  return read_trace_json(text, out).prefixed(path);
}

}  // namespace stalldx::record
