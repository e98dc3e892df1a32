// Chrome Trace Event JSON reader for stalldx traces, on nlohmann::json (a maintained, exception-safe
// parser whose errors carry the byte position). Every failure is a parse_error Status, never a throw.
#include <fmt/format.h>

#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "stalldx/trace_io.h"

namespace stalldx {

namespace {
using json = nlohmann::json;

struct BadTrace {
  std::string what;
};

std::int64_t get_int(const json& obj, const char* key, std::int64_t fallback) {
  auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number_unsigned()) {
    const auto u = it->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(INT64_MAX)) throw BadTrace{fmt::format("'{}' is out of range", key)};
    return static_cast<std::int64_t>(u);
  }
  throw BadTrace{fmt::format("'{}' must be an integer", key)};
}

// Microseconds with up to 3 decimals -> integer ns relative to origin.
std::int64_t get_us(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) throw BadTrace{fmt::format("missing '{}'", key)};
  if (!it->is_number()) throw BadTrace{fmt::format("'{}' must be a number", key)};
  const double us = it->get<double>();
  if (!std::isfinite(us) || std::fabs(us) > 9.0e12) throw BadTrace{fmt::format("'{}' = {} is out of range", key, us)};
  return std::llround(us * 1000.0);
}

const std::string& get_str(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) throw BadTrace{fmt::format("'{}' must be a string", key)};
  return it->get_ref<const std::string&>();
}

void read_meta(const json& m, Trace& t) {
  TraceMeta& meta = t.meta;
  meta.clock = get_str(m, "clock");
  meta.device = get_str(m, "device");
  meta.origin_ns = get_int(m, "origin_ns", 0);
  const json& c = m.at("collectors");
  meta.host = c.at("host").get<bool>();
  meta.cpu_time = c.at("cpu_time").get<bool>();
  meta.nvtx = c.at("nvtx").get<bool>();
  meta.cupti = c.at("cupti").get<bool>();
  const json& d = m.at("dropped");
  meta.dropped_host = static_cast<std::uint64_t>(get_int(d, "host", 0));
  meta.dropped_counters = static_cast<std::uint64_t>(get_int(d, "counters", 0));
  meta.dropped_device = static_cast<std::uint64_t>(get_int(d, "device", 0));
  meta.unmatched_device = static_cast<std::uint64_t>(get_int(m, "unmatched_device", 0));
  meta.skipped_events = static_cast<std::uint64_t>(get_int(m, "skipped_events", 0));
  if (auto h = m.find("host_facts"); h != m.end() && h->is_object()) {
    meta.host_facts.cpus = static_cast<int>(get_int(*h, "cpus", -1));
    meta.host_facts.usable_cpus = static_cast<int>(get_int(*h, "usable_cpus", -1));
    const auto num = [&](const char* key) {
      auto it = h->find(key);
      if (it == h->end()) return -1.0;
      if (!it->is_number() || !std::isfinite(it->get<double>())) throw BadTrace{fmt::format("host_facts.{} must be a number", key)};
      return it->get<double>();
    };
    meta.host_facts.load_1m_start = num("load_1m_start");
    meta.host_facts.load_1m_end = num("load_1m_end");
  }
  meta.interrupted = m.at("interrupted").get<bool>();
  meta.steps_completed = get_int(m, "steps_completed", -1);
  for (const auto& [k, v] : m.at("config").items()) meta.config[k] = v.get<std::string>();
  for (const json& n : m.at("names")) t.names.append(n.get<std::string>());
  for (const json& th : m.at("threads")) {
    std::uint64_t pthread = 0;
    if (th.contains("pthread")) {
      try { pthread = std::stoull(get_str(th, "pthread")); } catch (const std::exception&) { throw BadTrace{"bad thread 'pthread' id"}; }
    }
    t.threads.push_back(ThreadInfo{static_cast<std::uint32_t>(get_int(th, "id", 0)), get_int(th, "os_tid", 0), get_str(th, "name"), pthread,
                                   get_int(th, "pid", 0), th.contains("process") ? get_str(th, "process") : std::string()});
  }
}

std::uint32_t name_of(const json& ev, Trace& t) { return t.names.intern(get_str(ev, "name")); }

std::uint32_t host_lane(const json& ev, const Trace& t) {
  const std::int64_t tid = get_int(ev, "tid", 0) - 1;
  if (tid < 0 || tid >= static_cast<std::int64_t>(t.threads.size()))
    throw BadTrace{fmt::format("tid {} names no thread in metadata.threads", tid + 1)};
  return static_cast<std::uint32_t>(tid);
}

void read_event(const json& ev, Trace& t) {
  if (!ev.is_object()) throw BadTrace{"event is not an object"};
  const std::string& ph = get_str(ev, "ph");
  const std::int64_t origin = t.meta.origin_ns;
  // Wholly before the trace's origin (a session records nothing that ended before it began): not usable,
  // counted. A range that began earlier and ends after the origin is fine.
  if ((ph == "X" && get_us(ev, "ts") + (ev.contains("dur") ? get_us(ev, "dur") : 0) < 0) || (ph == "C" && get_us(ev, "ts") < 0)) {
    t.meta.skipped_events++;
    return;
  }
  if (ph == "X") {
    const json& args = ev.at("args");
    const std::string& kind = get_str(args, "kind");
    const std::int64_t begin = get_us(ev, "ts") + origin;
    const std::int64_t dur = get_us(ev, "dur");
    if (dur < 0) throw BadTrace{"negative 'dur'"};
    if (kind == "range") {
      HostRange r;
      r.begin_ns = begin;
      r.end_ns = begin + dur;
      r.thread = host_lane(ev, t);
      r.name = name_of(ev, t);
      auto role = role_from_name(get_str(ev, "cat"));
      if (!role) throw BadTrace{fmt::format("unknown role '{}'", get_str(ev, "cat"))};
      r.role = *role;
      r.step = get_int(args, "step", -1);
      r.batch = get_int(args, "batch", -1);
      r.sample = get_int(args, "sample", -1);
      r.cpu_ns = get_int(args, "cpu_ns", -1);
      r.runq_ns = get_int(args, "runq_ns", -1);
      r.bytes = static_cast<std::uint64_t>(get_int(args, "bytes", 0));
      t.ranges.push_back(r);
    } else if (kind == "runtime") {
      RuntimeCall c;
      c.begin_ns = begin;
      c.end_ns = begin + dur;
      c.thread = host_lane(ev, t);
      c.name = name_of(ev, t);
      c.correlation = static_cast<std::uint64_t>(get_int(args, "correlation", 0));
      c.step = get_int(args, "step", -1);
      t.calls.push_back(c);
    } else if (kind == "device") {
      DeviceActivity a;
      a.begin_ns = begin;
      a.end_ns = begin + dur;
      a.device = static_cast<std::int32_t>(get_int(args, "device", 0));
      a.stream = static_cast<std::uint32_t>(get_int(args, "stream", 0));
      if (!activity_kind_from_name(get_str(ev, "cat"), a.kind)) throw BadTrace{fmt::format("unknown activity kind '{}'", get_str(ev, "cat"))};
      a.name = name_of(ev, t);
      a.bytes = static_cast<std::uint64_t>(get_int(args, "bytes", 0));
      if (args.contains("host_mem") && !mem_kind_from_name(get_str(args, "host_mem"), a.host_mem))
        throw BadTrace{"unknown host_mem"};
      a.correlation = static_cast<std::uint64_t>(get_int(args, "correlation", 0));
      a.step = get_int(args, "step", -1);
      t.activities.push_back(a);
    } else {
      throw BadTrace{fmt::format("unknown event kind '{}'", kind)};
    }
  } else if (ph == "C") {
    CounterSample c;
    c.ts_ns = get_us(ev, "ts") + origin;
    c.name = name_of(ev, t);
    const json& v = ev.at("args").at("value");
    if (!v.is_number()) throw BadTrace{"counter value must be a number"};
    c.value = v.get<double>();
    t.counters.push_back(c);
  }
  // "M" (lane names) and "s"/"f" (flows) are derived from the records; nothing to load.
}
// Names what the document is when it is not a stalldx trace, so the message says what was found.
Status require_stalldx_format(const json& doc) {
  auto m = doc.find("metadata");
  if (m != doc.end() && m->is_object() && m->contains("stalldx_version")) return Status::ok();
  const bool chrome = doc.contains("traceEvents");
  if (chrome && (doc.contains("schemaVersion") || doc.contains("deviceProperties") || doc.contains("baseTimeNanoseconds") ||
                 doc.contains("distributedInfo")))
    return Status::invalid(
        "this is a torch.profiler (Kineto) trace, not a stalldx trace: its reader is not part of this stalldx yet; "
        "record the program with `stalldx record` or the stalldx profiler instead");
  if (chrome) return Status::invalid("this is a Chrome trace from another tool (no stalldx metadata): stalldx reads its own traces");
  return Status::parse("not a stalldx trace: no 'metadata.stalldx_version' and no 'traceEvents'");
}
}  // namespace

Status read_text_file(const std::string& path, std::string& out) {
  out.clear();
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files as they are, gzip (.gz) files decompressed
  if (f == nullptr) return Status::io(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  gzbuffer(f, 1u << 20);
  std::string chunk(1u << 20, '\0');
  for (;;) {
    const int n = gzread(f, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (n < 0) {
      int err = 0;
      const std::string why = gzerror(f, &err);
      gzclose(f);
      return Status::io(fmt::format("cannot read '{}': {}", path, why));
    }
    if (n == 0) break;
    out.append(chunk.data(), static_cast<std::size_t>(n));
  }
  const int rc = gzclose(f);
  if (rc == Z_BUF_ERROR) return Status::parse(fmt::format("'{}' is a truncated gzip file", path));
  if (rc != Z_OK) return Status::io(fmt::format("cannot read '{}' (zlib error {})", path, rc));
  return Status::ok();
}

Status read_trace_json(const std::string& text, Trace& out) {
  out = Trace{};
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    return Status::parse(fmt::format("malformed trace JSON at byte {} of {}: {}", e.byte, text.size(), e.what()));
  } catch (const json::exception& e) {  // e.g. number overflow (406): no byte offset from the library
    return Status::parse(fmt::format("malformed trace JSON (byte offset unknown, {} bytes): {}", text.size(), e.what()));
  }
  if (!doc.is_object()) return Status::parse("malformed trace: the top level is not a JSON object");
  if (Status st = require_stalldx_format(doc); !st.is_ok()) return st;
  std::size_t index = 0;
  try {
    read_meta(doc.at("metadata"), out);  // present: require_stalldx_format checked it
    auto evs = doc.find("traceEvents");
    if (evs == doc.end() || !evs->is_array()) throw BadTrace{"no 'traceEvents' array"};
    for (const json& ev : *evs) {
      read_event(ev, out);
      ++index;
    }
  } catch (const BadTrace& e) {
    out = Trace{};
    return Status::parse(fmt::format("invalid trace (event #{}): {}", index, e.what));
  } catch (const json::exception& e) {
    out = Trace{};
    return Status::parse(fmt::format("invalid trace (event #{}): {}", index, e.what()));
  }
  return Status::ok();
}

Status read_trace_file(const std::string& path, Trace& out) {
  std::string text;
  if (Status st = read_text_file(path, text); !st.is_ok()) return st;
  return read_trace_json(text, out).prefixed(path);
}

}  // namespace stalldx
