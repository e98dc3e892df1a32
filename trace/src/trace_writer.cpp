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
};

}  // namespace

Status write_trace_json(const Trace& t, std::ostream& os) {
  Writer w{t, {}, os};
  const std::int64_t origin = t.meta.origin_ns;
  w.buf.reserve(1u << 21);
  w.buf += "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";

  // Lanes: host process(es) + threads, one process per device with its streams. Threads of recorded
  // programs group by their OS process (lane pid kFirstProcessPid + ordinal of first appearance).
  std::vector<int> lane_pid(t.threads.size(), kHostPid);
  {
    std::unordered_map<std::int64_t, int> ordinal;
    bool host_named = false;
    for (std::size_t i = 0; i < t.threads.size(); ++i) {
      const ThreadInfo& th = t.threads[i];
      if (th.pid == 0) {
        if (!host_named) {
          w.begin_event();
          fmt::format_to(std::back_inserter(w.buf), "{{\"ph\":\"M\",\"pid\":{},\"name\":\"process_name\",\"args\":{{\"name\":\"host\"}}}}", kHostPid);
          host_named = true;
        }
        continue;
      }
      auto [it, fresh] = ordinal.emplace(th.pid, kFirstProcessPid + static_cast<int>(ordinal.size()));
      lane_pid[i] = it->second;
      if (!fresh) continue;
      w.begin_event();
      fmt::format_to(std::back_inserter(w.buf), "{{\"ph\":\"M\",\"pid\":{},\"name\":\"process_name\",\"args\":{{\"name\":", it->second);
      append_escaped(w.buf, fmt::format("pid {}: {}", th.pid, th.process));
      w.buf += "}}";
    }
    if (!host_named && t.threads.empty()) {
      w.begin_event();
      fmt::format_to(std::back_inserter(w.buf), "{{\"ph\":\"M\",\"pid\":{},\"name\":\"process_name\",\"args\":{{\"name\":\"host\"}}}}", kHostPid);
    }
  }
  const auto host_pid = [&](std::uint32_t thread) { return thread < lane_pid.size() ? lane_pid[thread] : kHostPid; };
  for (const ThreadInfo& th : t.threads) {
    w.begin_event();
    fmt::format_to(std::back_inserter(w.buf), "{{\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"thread_name\",\"args\":{{\"name\":", host_pid(th.id), th.id + 1);
    append_escaped(w.buf, fmt::format("{} ({})", th.name, th.os_tid));
    w.buf += "}}";
  }
  std::unordered_map<std::int64_t, bool> lanes;  // (device << 32 | stream) seen
  for (const DeviceActivity& a : t.activities) {
    const std::int64_t key = (static_cast<std::int64_t>(a.device) << 32) | a.stream;
    if (lanes.emplace(key, true).second) {
      bool new_device = true;
      for (auto& [k, v] : lanes)
        if (k != key && (k >> 32) == a.device) new_device = false;
      if (new_device) {
        w.begin_event();
        fmt::format_to(std::back_inserter(w.buf), "{{\"ph\":\"M\",\"pid\":{},\"name\":\"process_name\",\"args\":{{\"name\":\"{}\"}}}}",
                       device_pid(a.device), a.device < 0 ? std::string("device (host stand-in)") : fmt::format("GPU {}", a.device));
      }
      w.begin_event();
      fmt::format_to(std::back_inserter(w.buf), "{{\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"thread_name\",\"args\":{{\"name\":\"{}\"}}}}",
                     device_pid(a.device), a.stream, a.device < 0 ? std::string("stand-in compute") : fmt::format("stream {}", a.stream));
    }
  }

  for (const HostRange& r : t.ranges) {
    w.begin_event();
    fmt::format_to(std::back_inserter(w.buf), "{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"cat\":\"{}\",\"ts\":", host_pid(r.thread), r.thread + 1, role_name(r.role));
    append_us(w.buf, r.begin_ns - origin);
    w.buf += ",\"dur\":";
    append_us(w.buf, r.end_ns - r.begin_ns);
    w.name_field(r.name);
    w.buf += ",\"args\":{\"kind\":\"range\"";
    if (r.step != -1) w.kv_int("step", r.step);
    if (r.batch != -1) w.kv_int("batch", r.batch);
    if (r.sample != -1) w.kv_int("sample", r.sample);
    if (r.cpu_ns != -1) w.kv_int("cpu_ns", r.cpu_ns);
    if (r.runq_ns != -1) w.kv_int("runq_ns", r.runq_ns);
    if (r.bytes != 0) w.kv_int("bytes", static_cast<std::int64_t>(r.bytes));
    w.buf += "}}";
  }
  for (const RuntimeCall& c : t.calls) {
    w.begin_event();
    fmt::format_to(std::back_inserter(w.buf), "{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"cat\":\"cuda_api\",\"ts\":", host_pid(c.thread), c.thread + 1);
    append_us(w.buf, c.begin_ns - origin);
    w.buf += ",\"dur\":";
    append_us(w.buf, c.end_ns - c.begin_ns);
    w.name_field(c.name);
    w.buf += ",\"args\":{\"kind\":\"runtime\"";
    w.kv_int("correlation", static_cast<std::int64_t>(c.correlation));
    if (c.step != -1) w.kv_int("step", c.step);
    w.buf += "}}";
  }
  // Flow starts: runtime call -> device activity, bound to the enclosing runtime slice.
  std::unordered_map<std::uint64_t, const RuntimeCall*> by_corr;
  by_corr.reserve(t.calls.size());
  for (const RuntimeCall& c : t.calls) by_corr.emplace(c.correlation, &c);
  for (const DeviceActivity& a : t.activities) {
    w.begin_event();
    fmt::format_to(std::back_inserter(w.buf), "{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"cat\":\"{}\",\"ts\":", device_pid(a.device), a.stream, activity_kind_name(a.kind));
    append_us(w.buf, a.begin_ns - origin);
    w.buf += ",\"dur\":";
    append_us(w.buf, a.end_ns - a.begin_ns);
    w.name_field(a.name);
    w.buf += ",\"args\":{\"kind\":\"device\"";
    w.kv_int("device", a.device);
    w.kv_int("stream", a.stream);
    if (a.bytes != 0) w.kv_int("bytes", static_cast<std::int64_t>(a.bytes));
    if (a.host_mem != MemKind::none) fmt::format_to(std::back_inserter(w.buf), ",\"host_mem\":\"{}\"", mem_kind_name(a.host_mem));
    if (a.correlation != 0) w.kv_int("correlation", static_cast<std::int64_t>(a.correlation));
    if (a.step != -1) w.kv_int("step", a.step);
    w.buf += "}}";
    if (a.correlation == 0) continue;
    auto it = by_corr.find(a.correlation);
    if (it == by_corr.end()) continue;
    const RuntimeCall& c = *it->second;
    w.begin_event();
    fmt::format_to(std::back_inserter(w.buf), "{{\"ph\":\"s\",\"id\":{},\"pid\":{},\"tid\":{},\"cat\":\"launch\",\"name\":\"launch\",\"ts\":", a.correlation, host_pid(c.thread), c.thread + 1);
    append_us(w.buf, c.begin_ns - origin);
    w.buf += "}";
    w.begin_event();
    fmt::format_to(std::back_inserter(w.buf), "{{\"ph\":\"f\",\"bp\":\"e\",\"id\":{},\"pid\":{},\"tid\":{},\"cat\":\"launch\",\"name\":\"launch\",\"ts\":", a.correlation, device_pid(a.device), a.stream);
    append_us(w.buf, a.begin_ns - origin);
    w.buf += "}";
  }
  for (const CounterSample& c : t.counters) {
    w.begin_event();
    fmt::format_to(std::back_inserter(w.buf), "{{\"ph\":\"C\",\"pid\":{},\"ts\":", kHostPid);
    append_us(w.buf, c.ts_ns - origin);
    w.name_field(c.name);
    if (std::isfinite(c.value)) fmt::format_to(std::back_inserter(w.buf), ",\"args\":{{\"value\":{}}}}}", c.value);
    else w.buf += ",\"args\":{\"value\":0}}";
  }
  w.buf += "\n],\n\"metadata\":{\"stalldx_version\":1,\"clock\":";
  const TraceMeta& m = t.meta;
  append_escaped(w.buf, m.clock);
  w.buf += ",\"device\":";
  append_escaped(w.buf, m.device);
  fmt::format_to(std::back_inserter(w.buf),
                 ",\"origin_ns\":{},\"collectors\":{{\"host\":{},\"cpu_time\":{},\"nvtx\":{},\"cupti\":{}}},"
                 "\"dropped\":{{\"host\":{},\"counters\":{},\"device\":{}}},\"unmatched_device\":{},\"skipped_events\":{},"
                 "\"interrupted\":{},\"standin\":{},\"steps_completed\":{},"
                 "\"host_facts\":{{\"cpus\":{},\"usable_cpus\":{},\"load_1m_start\":{},\"load_1m_end\":{}}},\"config\":{{",
                 m.origin_ns, m.host, m.cpu_time, m.nvtx, m.cupti, m.dropped_host, m.dropped_counters, m.dropped_device,
                 m.unmatched_device, m.skipped_events, m.interrupted, m.standin, m.steps_completed, m.host_facts.cpus, m.host_facts.usable_cpus,
                 m.host_facts.load_1m_start, m.host_facts.load_1m_end);
  bool first = true;
  for (const auto& [k, v] : m.config) {
    if (!first) w.buf += ",";
    first = false;
    append_escaped(w.buf, k);
    w.buf += ":";
    append_escaped(w.buf, v);
  }
  w.buf += "},\"names\":[";
  for (std::size_t i = 0; i < t.names.size(); ++i) {
    if (i) w.buf += ",";
    append_escaped(w.buf, t.names[i]);
  }
  w.buf += "],\"threads\":[";
  for (std::size_t i = 0; i < t.threads.size(); ++i) {
    if (i) w.buf += ",";
    fmt::format_to(std::back_inserter(w.buf), "{{\"id\":{},\"os_tid\":{},\"pthread\":\"{}\",\"name\":", t.threads[i].id,
                   t.threads[i].os_tid, t.threads[i].pthread_id);
    append_escaped(w.buf, t.threads[i].name);
    if (t.threads[i].pid != 0) {
      fmt::format_to(std::back_inserter(w.buf), ",\"pid\":{},\"process\":", t.threads[i].pid);
      append_escaped(w.buf, t.threads[i].process);
    }
    w.buf += "}";
  }
  w.buf += "]}}\n";
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
