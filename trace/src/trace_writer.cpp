// Chrome Trace Event JSON writer. Timestamps are written relative to meta.origin_ns as microseconds with
// exactly three decimals, so every nanosecond survives the round trip (and double precision holds for
// runs of days). Hand-formatted with fmt for speed; the reader uses a JSON library.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <unordered_map>

#include "stalldx/output_file.h"
#include "stalldx/text.h"
#include "stalldx/trace_io.h"

namespace stalldx {

namespace {

constexpr int kHostPid = 1;
constexpr int kFirstProcessPid = 1000;  // above the device lanes (100 + device)
int device_pid(std::int32_t device) { return 100 + device; }  // -1 (host stand-in) -> 99

// JSON string of `s`; bytes that are not valid UTF-8 become U+FFFD (names are untrusted bytes).
void append_escaped(std::string& out, const std::string& raw) {
  const std::string s = to_valid_utf8(raw);
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
        else out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
}

void append_us(std::string& out, std::int64_t ns) {
  if (ns < 0) { out.push_back('-'); ns = -ns; }
  fmt::format_to(std::back_inserter(out), "{}.{:03}", ns / 1000, ns % 1000);
}

struct Writer {
  const Trace& t;
  std::string buf;
  std::ostream& os;
  bool first = true;

  void begin_event() {
    if (!first) buf += ",\n";
    first = false;
    if (buf.size() > (1u << 20)) flush();
  }
  void flush() { os.write(buf.data(), static_cast<std::streamsize>(buf.size())); buf.clear(); }
  void kv_int(const char* key, std::int64_t v) { fmt::format_to(std::back_inserter(buf), ",\"{}\":{}", key, v); }
  void name_field(std::uint32_t id) { buf += ",\"name\":"; append_escaped(buf, t.name(id)); }

  // Sections, in the order written (each appends events; `origin` set first).
  void lanes();
  void host_ranges();
  void runtime_calls();
  void device_activities();  // with the launch flows from their calls
  void counters();
  void metadata();

  std::int64_t origin = 0;
  std::vector<int> lane_pid;  // by thread id: the lane's pid (kHostPid, or a recorded process's)
  int host_pid(std::uint32_t thread) const { return thread < lane_pid.size() ? lane_pid[thread] : kHostPid; }
};

}  // namespace

// Lanes: host process(es) + threads, one process per device with its streams. Threads of recorded
// programs group by their OS process (lane pid kFirstProcessPid + ordinal of first appearance).
void Writer::lanes() {
  lane_pid.assign(t.threads.size(), kHostPid);
  {
    std::unordered_map<std::int64_t, int> ordinal;
    bool host_named = false;
    for (std::size_t i = 0; i < t.threads.size(); ++i) {
      const ThreadInfo& th = t.threads[i];
      if (th.pid == 0) {
        if (!host_named) {
          begin_event();
          fmt::format_to(std::back_inserter(buf), "{{\"ph\":\"M\",\"pid\":{},\"name\":\"process_name\",\"args\":{{\"name\":\"host\"}}}}", kHostPid);
          host_named = true;
        }
        continue;
      }
      auto [it, fresh] = ordinal.emplace(th.pid, kFirstProcessPid + static_cast<int>(ordinal.size()));
      lane_pid[i] = it->second;
      if (!fresh) continue;
      begin_event();
      fmt::format_to(std::back_inserter(buf), "{{\"ph\":\"M\",\"pid\":{},\"name\":\"process_name\",\"args\":{{\"name\":", it->second);
      append_escaped(buf, fmt::format("pid {}: {}", th.pid, th.process));
      buf += "}}";
    }
    if (!host_named && t.threads.empty()) {
      begin_event();
      fmt::format_to(std::back_inserter(buf), "{{\"ph\":\"M\",\"pid\":{},\"name\":\"process_name\",\"args\":{{\"name\":\"host\"}}}}", kHostPid);
    }
  }
  for (const ThreadInfo& th : t.threads) {
    begin_event();
    fmt::format_to(std::back_inserter(buf), "{{\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"thread_name\",\"args\":{{\"name\":", host_pid(th.id), th.id + 1);
    append_escaped(buf, fmt::format("{} ({})", th.name, th.os_tid));
    buf += "}}";
  }
  std::unordered_map<std::int64_t, bool> lanes;  // (device << 32 | stream) seen
  for (const DeviceActivity& a : t.activities) {
    const std::int64_t key = (static_cast<std::int64_t>(a.device) << 32) | a.stream;
    if (lanes.emplace(key, true).second) {
      bool new_device = true;
      for (auto& [k, v] : lanes)
        if (k != key && (k >> 32) == a.device) new_device = false;
      if (new_device) {
        begin_event();
        fmt::format_to(std::back_inserter(buf), "{{\"ph\":\"M\",\"pid\":{},\"name\":\"process_name\",\"args\":{{\"name\":\"{}\"}}}}",
                       device_pid(a.device), a.device < 0 ? std::string("device (host stand-in)") : fmt::format("GPU {}", a.device));
      }
      begin_event();
      fmt::format_to(std::back_inserter(buf), "{{\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"thread_name\",\"args\":{{\"name\":\"{}\"}}}}",
                     device_pid(a.device), a.stream, a.device < 0 ? std::string("stand-in compute") : fmt::format("stream {}", a.stream));
    }
  }
}

void Writer::host_ranges() {
  for (const HostRange& r : t.ranges) {
    begin_event();
    fmt::format_to(std::back_inserter(buf), "{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"cat\":\"{}\",\"ts\":", host_pid(r.thread), r.thread + 1, role_name(r.role));
    append_us(buf, r.begin_ns - origin);
    buf += ",\"dur\":";
    append_us(buf, r.end_ns - r.begin_ns);
    name_field(r.name);
    buf += ",\"args\":{\"kind\":\"range\"";
    if (r.step != -1) kv_int("step", r.step);
    if (r.batch != -1) kv_int("batch", r.batch);
    if (r.sample != -1) kv_int("sample", r.sample);
    if (r.cpu_ns != -1) kv_int("cpu_ns", r.cpu_ns);
    if (r.runq_ns != -1) kv_int("runq_ns", r.runq_ns);
    if (r.bytes != 0) kv_int("bytes", static_cast<std::int64_t>(r.bytes));
    buf += "}}";
  }
}

void Writer::runtime_calls() {
  for (const RuntimeCall& c : t.calls) {
    begin_event();
    fmt::format_to(std::back_inserter(buf), "{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"cat\":\"cuda_api\",\"ts\":", host_pid(c.thread), c.thread + 1);
    append_us(buf, c.begin_ns - origin);
    buf += ",\"dur\":";
    append_us(buf, c.end_ns - c.begin_ns);
    name_field(c.name);
    buf += ",\"args\":{\"kind\":\"runtime\"";
    kv_int("correlation", static_cast<std::int64_t>(c.correlation));
    if (c.step != -1) kv_int("step", c.step);
    buf += "}}";
  }
}

void Writer::device_activities() {
  // Flow starts: runtime call -> device activity, bound to the enclosing runtime slice.
  std::unordered_map<std::uint64_t, const RuntimeCall*> by_corr;
  by_corr.reserve(t.calls.size());
  for (const RuntimeCall& c : t.calls) by_corr.emplace(c.correlation, &c);
  for (const DeviceActivity& a : t.activities) {
    begin_event();
    fmt::format_to(std::back_inserter(buf), "{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"cat\":\"{}\",\"ts\":", device_pid(a.device), a.stream, activity_kind_name(a.kind));
    append_us(buf, a.begin_ns - origin);
    buf += ",\"dur\":";
    append_us(buf, a.end_ns - a.begin_ns);
    name_field(a.name);
    buf += ",\"args\":{\"kind\":\"device\"";
    kv_int("device", a.device);
    kv_int("stream", a.stream);
    if (a.bytes != 0) kv_int("bytes", static_cast<std::int64_t>(a.bytes));
    if (a.host_mem != MemKind::none) fmt::format_to(std::back_inserter(buf), ",\"host_mem\":\"{}\"", mem_kind_name(a.host_mem));
    if (a.correlation != 0) kv_int("correlation", static_cast<std::int64_t>(a.correlation));
    if (a.step != -1) kv_int("step", a.step);
    buf += "}}";
    if (a.correlation == 0) continue;
    auto it = by_corr.find(a.correlation);
    if (it == by_corr.end()) continue;
    const RuntimeCall& c = *it->second;
    begin_event();
    fmt::format_to(std::back_inserter(buf), "{{\"ph\":\"s\",\"id\":{},\"pid\":{},\"tid\":{},\"cat\":\"launch\",\"name\":\"launch\",\"ts\":", a.correlation, host_pid(c.thread), c.thread + 1);
    append_us(buf, c.begin_ns - origin);
    buf += "}";
    begin_event();
    fmt::format_to(std::back_inserter(buf), "{{\"ph\":\"f\",\"bp\":\"e\",\"id\":{},\"pid\":{},\"tid\":{},\"cat\":\"launch\",\"name\":\"launch\",\"ts\":", a.correlation, device_pid(a.device), a.stream);
    append_us(buf, a.begin_ns - origin);
    buf += "}";
  }
}

void Writer::counters() {
  for (const CounterSample& c : t.counters) {
    begin_event();
    fmt::format_to(std::back_inserter(buf), "{{\"ph\":\"C\",\"pid\":{},\"ts\":", kHostPid);
    append_us(buf, c.ts_ns - origin);
    name_field(c.name);
    if (std::isfinite(c.value)) fmt::format_to(std::back_inserter(buf), ",\"args\":{{\"value\":{}}}}}", c.value);
    else buf += ",\"args\":{\"value\":0}}";
  }
}

void Writer::metadata() {
  buf += "\n],\n\"metadata\":{\"stalldx_version\":1,\"clock\":";
  const TraceMeta& m = t.meta;
  append_escaped(buf, m.clock);
  buf += ",\"device\":";
  append_escaped(buf, m.device);
  fmt::format_to(std::back_inserter(buf),
                 ",\"origin_ns\":{},\"collectors\":{{\"host\":{},\"cpu_time\":{},\"nvtx\":{},\"cupti\":{}}},"
                 "\"dropped\":{{\"host\":{},\"counters\":{},\"device\":{}}},\"unmatched_device\":{},\"skipped_events\":{},"
                 "\"interrupted\":{},\"standin\":{},\"steps_completed\":{},"
                 "\"host_facts\":{{\"cpus\":{},\"usable_cpus\":{},\"load_1m_start\":{},\"load_1m_end\":{}}},\"config\":{{",
                 m.origin_ns, m.host, m.cpu_time, m.nvtx, m.cupti, m.dropped_host, m.dropped_counters, m.dropped_device,
                 m.unmatched_device, m.skipped_events, m.interrupted, m.standin, m.steps_completed, m.host_facts.cpus, m.host_facts.usable_cpus,
                 m.host_facts.load_1m_start, m.host_facts.load_1m_end);
  bool first_key = true;
  for (const auto& [k, v] : m.config) {
    if (!first_key) buf += ",";
    first_key = false;
    append_escaped(buf, k);
    buf += ":";
    append_escaped(buf, v);
  }
  buf += "},\"names\":[";
  for (std::size_t i = 0; i < t.names.size(); ++i) {
    if (i) buf += ",";
    append_escaped(buf, t.names[i]);
  }
  buf += "],\"threads\":[";
  for (std::size_t i = 0; i < t.threads.size(); ++i) {
    if (i) buf += ",";
    fmt::format_to(std::back_inserter(buf), "{{\"id\":{},\"os_tid\":{},\"pthread\":\"{}\",\"name\":", t.threads[i].id,
                   t.threads[i].os_tid, t.threads[i].pthread_id);
    append_escaped(buf, t.threads[i].name);
    if (t.threads[i].pid != 0) {
      fmt::format_to(std::back_inserter(buf), ",\"pid\":{},\"process\":", t.threads[i].pid);
      append_escaped(buf, t.threads[i].process);
    }
    buf += "}";
  }
  buf += "]}}\n";
}

Status write_trace_json(const Trace& t, std::ostream& os) {
  Writer w{t, {}, os};
  w.origin = t.meta.origin_ns;
  w.buf.reserve(1u << 21);
  w.buf += "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  w.lanes();
  w.host_ranges();
  w.runtime_calls();
  w.device_activities();
  w.counters();
  w.metadata();
  w.flush();
  os.flush();
  if (!os) return Status::io("write failed while writing the trace");
  return Status::ok();
}

Status write_trace_file(const Trace& trace, const std::string& path) {
  if (Status st = refuse_non_regular(path); !st.is_ok()) return st;
  std::string tmp;
  const int fd = create_temp_beside(path, tmp);  // our own new file: a link planted beside the trace is never followed
  if (fd < 0) return Status::io(fmt::format("cannot create a temporary file beside trace '{}': {}", path, std::strerror(errno)));
  ::close(fd);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::io(fmt::format("cannot open trace file '{}' for writing: {}", tmp, std::strerror(errno)));
    Status ws = write_trace_json(trace, out);
    out.close();
    if (!ws.is_ok() || !out) {
      std::remove(tmp.c_str());
      return Status::io(fmt::format("writing trace '{}' failed (disk full?): {}", path, ws.message()));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return Status::io(fmt::format("cannot move trace into place at '{}': {}", path, std::strerror(err)));
  }
  return Status::ok();
}

}  // namespace stalldx
