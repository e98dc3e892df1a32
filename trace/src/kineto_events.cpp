#include "kineto_events.h"

#include <algorithm>

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

std::int64_t int_arg(const element& args, const char* key, std::int64_t fallback) {
  auto v = args[key];
  if (v.error()) return fallback;
  if (auto i = v.get_int64(); !i.error()) return i.value();
  if (auto u = v.get_uint64(); !u.error()) return static_cast<std::int64_t>(u.value());
  if (auto d = v.get_double(); !d.error()) return static_cast<std::int64_t>(d.value());
  return fallback;
}

}  // namespace

std::uint32_t KinetoEvents::lane(std::int64_t pid, std::int64_t tid) {
  auto [it, fresh] = lane_of_.emplace(std::make_pair(pid, tid), static_cast<std::uint32_t>(out_.threads.size()));
  if (fresh) out_.threads.push_back(ThreadInfo{it->second, tid, "thread", 0, pid, ""});
  return it->second;
}

const KinetoEvents::NameInfo& KinetoEvents::info(std::string_view n) {
  auto it = names_.find(n);
  if (it != names_.end()) return it->second;
  return names_.emplace(std::string(n), NameInfo{out_.intern(n), roles_.match(std::string(n), "")}).first->second;
}

void KinetoEvents::on_event(const element& ev) {
  rep_.events++;
  object o;
  if (ev.get_object().get(o)) { rep_.not_understood++; return; }
  std::string_view ph, cat, name;
  if (o["ph"].get_string().get(ph)) { rep_.not_understood++; return; }
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
    rep_.ignored++;
    return;
  }
  if (ph != "X") {
    rep_.ignored += (ph == "s" || ph == "f" || ph == "i" || ph == "I" || ph == "C") ? 1 : 0;
    rep_.not_understood += (ph == "s" || ph == "f" || ph == "i" || ph == "I" || ph == "C") ? 0 : 1;
    return;
  }
  if (o["cat"].get_string().get(cat)) cat = {};
  if (o["name"].get_string().get(name)) name = {};
  double ts = 0, dur = 0;
  if (o["ts"].get_double().get(ts)) {
    std::int64_t its = 0;
    if (o["ts"].get_int64().get(its)) { rep_.not_understood++; return; }
    ts = static_cast<double>(its);
  }
  if (o["dur"].get_double().get(dur)) {
    std::int64_t idur = 0;
    if (!o["dur"].get_int64().get(idur)) dur = static_cast<double>(idur);
  }
  if (!(dur >= 0) || !std::isfinite(ts)) { rep_.not_understood++; return; }
  const std::int64_t begin = kineto_ns(ts), end = kineto_ns(ts + dur);
  element args;
  const bool has_args = !o["args"].get(args);
  const std::int64_t pid = int_arg(ev, "pid", 0), tid = int_arg(ev, "tid", 0);
  const Cat c = cat.empty() && untyped_host_ops ? Cat::cpu_op : category(cat);
  switch (c) {
    case Cat::cpu_op:
    case Cat::annotation: {
      const std::optional<Role> role = info(name).role;
      if (c == Cat::cpu_op && !role) {
        // Kept aside: inside a single-process loader's wait they are the loader's CPU work.
        folded.push_back(HostRange{begin, end, lane(pid, tid), info(name).id, Role::decode});
        break;
      }
      PendingRange p;
      p.range.begin_ns = begin;
      p.range.end_ns = end;
      p.range.thread = lane(pid, tid);
      p.range.name = info(name).id;
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
      call.name = info(name).id;
      call.correlation = has_args ? static_cast<std::uint64_t>(int_arg(args, "correlation", 0)) : 0;
      out_.calls.push_back(call);
      rep_.calls++;
      break;
    }
    case Cat::kernel:
    case Cat::memcpy:
    case Cat::memset: {
      DeviceActivity a;
      a.begin_ns = begin;
      a.end_ns = end;
      a.name = info(name).id;
      a.kind = c == Cat::kernel ? ActivityKind::kernel : c == Cat::memset ? ActivityKind::memset : ActivityKind::memcpy_other;
      if (c == Cat::memcpy) memcpy_kind(name, a.kind, a.host_mem);
      if (has_args) {
        a.device = static_cast<std::int32_t>(int_arg(args, "device", 0));
        a.stream = static_cast<std::uint32_t>(int_arg(args, "stream", tid));
        a.correlation = static_cast<std::uint64_t>(int_arg(args, "correlation", 0));
        a.bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, int_arg(args, "bytes", 0)));
      }
      out_.activities.push_back(a);
      rep_.device++;
      break;
    }
    case Cat::ignored: rep_.ignored++; break;
    case Cat::unknown: rep_.not_understood++; break;
  }
}

}  // namespace stalldx::record
