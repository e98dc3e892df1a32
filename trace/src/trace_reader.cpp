// Chrome Trace Event JSON reader for stalldx traces, on simdjson's DOM parser (Debian's libsimdjson:
// parses at ~1 GB/s into a compact tape, where nlohmann's DOM read ~20 MB/s and took ~10x the file in
// memory). When the document is not valid JSON, a second pass with nlohmann's SAX parser — no DOM, so
// memory stays flat — finds the byte where it breaks, for the message. Every failure is a parse_error
// Status, never a throw.
#include <fmt/format.h>
#include <simdjson.h>
#include <sys/stat.h>

#include <zlib.h>

#include <cstdlib>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <charconv>
#include <optional>
#include <string_view>

#include "json_runs.h"
#include "stalldx/trace_io.h"

namespace stalldx {

namespace {
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

struct BadTrace {
  std::string what;
};

// The member `key` of `obj`, or nullopt when absent.
std::optional<element> find(const object& obj, std::string_view key) {
  element e;
  if (obj.at_key(key).get(e) != simdjson::SUCCESS) return std::nullopt;
  return e;
}

object as_object(const element& e, const char* what) {
  object o;
  if (e.get_object().get(o) != simdjson::SUCCESS) throw BadTrace{fmt::format("'{}' must be an object", what)};
  return o;
}

object member_object(const object& obj, const char* key) {
  auto e = find(obj, key);
  if (!e) throw BadTrace{fmt::format("missing '{}'", key)};
  return as_object(*e, key);
}

std::int64_t get_int(const object& obj, const char* key, std::int64_t fallback) {
  auto e = find(obj, key);
  if (!e) return fallback;
  if (e->type() == element_type::INT64) return e->get_int64().value_unsafe();
  if (e->type() == element_type::UINT64) throw BadTrace{fmt::format("'{}' is out of range", key)};  // > INT64_MAX
  throw BadTrace{fmt::format("'{}' must be an integer", key)};
}

double get_number(const element& e, const char* key) {
  double v = 0;
  if (e.get_double().get(v) != simdjson::SUCCESS || !std::isfinite(v)) throw BadTrace{fmt::format("'{}' must be a number", key)};
  return v;
}

// Microseconds with up to 3 decimals -> integer ns relative to origin.
std::int64_t get_us(const object& obj, const char* key) {
  auto e = find(obj, key);
  if (!e) throw BadTrace{fmt::format("missing '{}'", key)};
  const double us = get_number(*e, key);
  if (std::fabs(us) > 9.0e12) throw BadTrace{fmt::format("'{}' = {} is out of range", key, us)};
  return std::llround(us * 1000.0);
}

std::string_view get_str(const object& obj, const char* key) {
  auto e = find(obj, key);
  std::string_view v;
  if (!e || e->get_string().get(v) != simdjson::SUCCESS) throw BadTrace{fmt::format("'{}' must be a string", key)};
  return v;
}

bool get_bool(const object& obj, const char* key) {
  auto e = find(obj, key);
  bool v = false;
  if (!e || e->get_bool().get(v) != simdjson::SUCCESS) throw BadTrace{fmt::format("'{}' must be true or false", key)};
  return v;
}

void read_meta(const object& m, Trace& t) {
  TraceMeta& meta = t.meta;
  meta.clock = std::string(get_str(m, "clock"));
  meta.device = std::string(get_str(m, "device"));
  meta.origin_ns = get_int(m, "origin_ns", 0);
  const object c = member_object(m, "collectors");
  meta.host = get_bool(c, "host");
  meta.cpu_time = get_bool(c, "cpu_time");
  meta.nvtx = get_bool(c, "nvtx");
  meta.cupti = get_bool(c, "cupti");
  const object d = member_object(m, "dropped");
  meta.dropped_host = static_cast<std::uint64_t>(get_int(d, "host", 0));
  meta.dropped_counters = static_cast<std::uint64_t>(get_int(d, "counters", 0));
  meta.dropped_device = static_cast<std::uint64_t>(get_int(d, "device", 0));
  meta.unmatched_device = static_cast<std::uint64_t>(get_int(m, "unmatched_device", 0));
  meta.skipped_events = static_cast<std::uint64_t>(get_int(m, "skipped_events", 0));
  if (auto h = find(m, "host_facts"); h && h->is_object()) {
    const object hf = as_object(*h, "host_facts");
    meta.host_facts.cpus = static_cast<int>(get_int(hf, "cpus", -1));
    meta.host_facts.usable_cpus = static_cast<int>(get_int(hf, "usable_cpus", -1));
    const auto num = [&](const char* key) {
      auto e = find(hf, key);
      return e ? get_number(*e, key) : -1.0;
    };
    meta.host_facts.load_1m_start = num("load_1m_start");
    meta.host_facts.load_1m_end = num("load_1m_end");
  }
  meta.interrupted = get_bool(m, "interrupted");
  if (find(m, "standin")) meta.standin = get_bool(m, "standin");  // absent in traces written before it
  meta.steps_completed = get_int(m, "steps_completed", -1);
  for (auto [k, v] : member_object(m, "config")) {
    std::string_view value;
    if (v.get_string().get(value) != simdjson::SUCCESS) throw BadTrace{fmt::format("config '{}' must be a string", k)};
    meta.config[std::string(k)] = std::string(value);
  }
  if (auto s = meta.config.find("standin"); s != meta.config.end()) {  // older traces: a config entry, read once here
    meta.standin = meta.standin || s->second == "true";
    meta.config.erase(s);
  }
  simdjson::dom::array names, threads;
  if (auto e = find(m, "names"); !e || e->get_array().get(names) != simdjson::SUCCESS) throw BadTrace{"'names' must be an array"};
  for (element n : names) {
    std::string_view v;
    if (n.get_string().get(v) != simdjson::SUCCESS) throw BadTrace{"'names' must hold strings"};
    t.names.append(std::string(v));
  }
  if (auto e = find(m, "threads"); !e || e->get_array().get(threads) != simdjson::SUCCESS) throw BadTrace{"'threads' must be an array"};
  for (element e : threads) {
    const object th = as_object(e, "threads[]");
    std::uint64_t pthread = 0;
    if (find(th, "pthread")) {
      const std::string_view p = get_str(th, "pthread");
      const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), pthread);
      if (ec != std::errc() || end != p.data() + p.size()) throw BadTrace{"bad thread 'pthread' id"};
    }
    t.threads.push_back(ThreadInfo{static_cast<std::uint32_t>(get_int(th, "id", 0)), get_int(th, "os_tid", 0), std::string(get_str(th, "name")),
                                   pthread, get_int(th, "pid", 0), find(th, "process") ? std::string(get_str(th, "process")) : std::string()});
  }
}

std::uint32_t name_of(const object& ev, Trace& t) { return t.names.intern(get_str(ev, "name")); }

std::uint32_t host_lane(const object& ev, const Trace& t) {
  const std::int64_t tid = get_int(ev, "tid", 0) - 1;
  if (tid < 0 || tid >= static_cast<std::int64_t>(t.threads.size()))
    throw BadTrace{fmt::format("tid {} names no thread in metadata.threads", tid + 1)};
  return static_cast<std::uint32_t>(tid);
}

void read_event(const element& e, Trace& t) {
  const object ev = as_object(e, "event");
  const std::string_view ph = get_str(ev, "ph");
  const std::int64_t origin = t.meta.origin_ns;
  // Wholly before the trace's origin: not usable, counted (one that began earlier and ends after it is fine).
  if ((ph == "X" && get_us(ev, "ts") + (find(ev, "dur") ? get_us(ev, "dur") : 0) < 0) || (ph == "C" && get_us(ev, "ts") < 0)) {
    t.meta.skipped_events++;
    return;
  }
  if (ph == "X") {
    const object args = member_object(ev, "args");
    const std::string_view kind = get_str(args, "kind");
    const std::int64_t begin = get_us(ev, "ts") + origin;
    const std::int64_t dur = get_us(ev, "dur");
    if (dur < 0) throw BadTrace{"negative 'dur'"};
    if (kind == "range") {
      HostRange r;
      r.begin_ns = begin;
      r.end_ns = begin + dur;
      r.thread = host_lane(ev, t);
      r.name = name_of(ev, t);
      const std::string_view cat = get_str(ev, "cat");
      auto role = role_from_name(std::string(cat));
      if (!role) throw BadTrace{fmt::format("unknown role '{}'", cat)};
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
      const std::string_view cat = get_str(ev, "cat");
      if (!activity_kind_from_name(std::string(cat), a.kind)) throw BadTrace{fmt::format("unknown activity kind '{}'", cat)};
      a.name = name_of(ev, t);
      a.bytes = static_cast<std::uint64_t>(get_int(args, "bytes", 0));
      if (find(args, "host_mem") && !mem_kind_from_name(std::string(get_str(args, "host_mem")), a.host_mem)) throw BadTrace{"unknown host_mem"};
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
    auto v = find(member_object(ev, "args"), "value");
    if (!v || !v->is_number()) throw BadTrace{"counter value must be a number"};
    c.value = v->get_double().value_unsafe();
    t.counters.push_back(c);
  }
  // "M" (lane names) and "s"/"f" (flows) are derived from the records; nothing to load.
}

// Names what the document is when it is not a stalldx trace, so the message says what was found.
Status require_stalldx_format(const object& doc) {
  if (auto m = find(doc, "metadata"); m && m->is_object() && find(as_object(*m, "metadata"), "stalldx_version")) return Status::ok();
  const bool chrome = find(doc, "traceEvents").has_value();
  if (chrome && (find(doc, "schemaVersion") || find(doc, "deviceProperties") || find(doc, "baseTimeNanoseconds") || find(doc, "distributedInfo")))
    return Status::invalid(
        "this is a torch.profiler (Kineto) trace, not a stalldx trace: its reader is not part of this stalldx yet; "
        "record the program with `stalldx record` or the stalldx profiler instead");
  if (chrome) return Status::invalid("this is a Chrome trace from another tool (no stalldx metadata): stalldx reads its own traces");
  return Status::parse("not a stalldx trace: no 'metadata.stalldx_version' and no 'traceEvents'");
}

// Where a document that simdjson refused stops being JSON: nlohmann's SAX parser with a handler that
// keeps nothing (memory stays flat whatever the size) reports the byte and what it expected there.
struct ErrorFinder : nlohmann::json_sax<nlohmann::json> {
  std::string where;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception& e) override {
    where = fmt::format("at byte {}: {}", byte, e.what());
    return false;
  }
};
}  // namespace

InputLimits input_limits() {
  InputLimits l;
  if (const char* env = std::getenv(kMaxInputEnv); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0' && mb > 0) {
      l.max_bytes = mb << 20;
      l.max_ratio = 0;  // the user's bound replaces both
    }
  }
  return l;
}

Status read_text_file(const std::string& path, std::string& out) {
  out.clear();
  struct stat sb {};
  if (::stat(path.c_str(), &sb) != 0) return Status::io(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  if (S_ISDIR(sb.st_mode)) return Status::invalid(fmt::format("'{}' is a folder, not a file", path));
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files as they are, gzip (.gz) files decompressed
  if (f == nullptr) return Status::io(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  gzbuffer(f, 1u << 20);
  // Room for the file (gzip grows past it) plus the parser's padding: the JSON parser reads it in place.
  if (sb.st_size > 0) out.reserve(static_cast<std::size_t>(sb.st_size) + simdjson::SIMDJSON_PADDING);
  // Decompression is bounded (a 6 MB gzip file can expand to 6 GB): absolutely, and for gzip by ratio.
  const InputLimits limits = input_limits();
  const std::uint64_t by_ratio = limits.max_ratio > 0 ? std::max<std::uint64_t>(std::uint64_t(sb.st_size) * limits.max_ratio, 64u << 20) : UINT64_MAX;
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
    const bool gzip = gzdirect(f) == 0;
    const std::uint64_t bound = gzip ? std::min<std::uint64_t>(limits.max_bytes, by_ratio) : limits.max_bytes;
    if (out.size() > bound) {
      gzclose(f);
      out.clear();
      out.shrink_to_fit();
      return Status::invalid(fmt::format("'{}' expands past {} MB{} — refused as a guard against decompression bombs; set {}=<MB> to "
                                         "allow more",
                                         path, bound >> 20, gzip && bound == by_ratio ? fmt::format(" ({}x its {} bytes)", limits.max_ratio, sb.st_size) : "",
                                         kMaxInputEnv));
    }
  }
  if (out.capacity() - out.size() < simdjson::SIMDJSON_PADDING) out.reserve(out.size() + simdjson::SIMDJSON_PADDING);
  const int rc = gzclose(f);
  if (rc == Z_BUF_ERROR) return Status::parse(fmt::format("'{}' is a truncated gzip file", path));
  if (rc != Z_OK) return Status::io(fmt::format("cannot read '{}' (zlib error {})", path, rc));
  return Status::ok();
}

// stalldx's writer lays a trace out as `{"displayTimeUnit":"ns","traceEvents":[\n` EVENT (`,\n` EVENT)*
// `\n],\n"metadata":{...}}`, one event per line (strings escape their newlines): the metadata is parsed
// alone, then the events in runs (json_runs.h). Returns false, with `out` in any state, when the text is
// not in that layout or a run does not parse; the caller then reads the whole document, which also names
// the byte that is wrong.
constexpr std::string_view kHead = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
constexpr std::string_view kTail = "\n],\n\"metadata\":";

bool read_in_runs(const std::string& text, Trace& out, Status& st) {
  const std::string_view all(text);
  if (all.substr(0, kHead.size()) != kHead) return false;
  const std::size_t tail = all.rfind(kTail);
  if (tail == std::string_view::npos || tail < kHead.size() - 1) return false;
  JsonRuns runs;
  element meta_doc;
  if (!runs.parse("{", all.substr(tail + 4), "", meta_doc) || !meta_doc.is_object()) return false;
  std::size_t index = 0;
  try {
    const object doc = meta_doc.get_object().value_unsafe();
    if (auto m = find(doc, "metadata"); !m || !m->is_object() || !find(as_object(*m, "metadata"), "stalldx_version")) return false;
    read_meta(member_object(doc, "metadata"), out);
    const std::string_view events = tail < kHead.size() ? std::string_view() : all.substr(kHead.size(), tail - kHead.size());
    if (!runs.for_each(events, ",\n", 0, [&](const element& ev) {
          read_event(ev, out);
          ++index;
        }))
      return false;
  } catch (const BadTrace& e) {
    out = Trace{};
    st = Status::parse(fmt::format("invalid trace (event #{}): {}", index, e.what));
    return true;
  }
  st = Status::ok();
  return true;
}

Status read_trace_json(const std::string& text, Trace& out) {
  out = Trace{};
  if (Status st; read_in_runs(text, out, st)) return st;
  out = Trace{};
  simdjson::dom::parser parser;
  element root;
  // parse() reads the text in place when its capacity holds simdjson's padding (else copies it once).
  if (const auto err = parser.parse(text).get(root); err) {
    ErrorFinder finder;
    try {
      nlohmann::json::sax_parse(text, &finder);
    } catch (const std::exception&) {  // the handler returns false, so nothing is expected to throw
    }
    if (finder.where.empty()) finder.where = fmt::format("byte offset unknown, {} bytes", text.size());
    return Status::parse(fmt::format("malformed trace JSON ({}): {}", finder.where, simdjson::error_message(err)));
  }
  if (!root.is_object()) return Status::parse("malformed trace: the top level is not a JSON object");
  const object doc = root.get_object().value_unsafe();
  if (Status st = require_stalldx_format(doc); !st.is_ok()) return st;
  std::size_t index = 0;
  try {
    read_meta(member_object(doc, "metadata"), out);  // present: require_stalldx_format checked it
    simdjson::dom::array events;
    auto evs = find(doc, "traceEvents");
    if (!evs || evs->get_array().get(events) != simdjson::SUCCESS) throw BadTrace{"no 'traceEvents' array"};
    for (element ev : events) {
      read_event(ev, out);
      ++index;
    }
  } catch (const BadTrace& e) {
    out = Trace{};
    return Status::parse(fmt::format("invalid trace (event #{}): {}", index, e.what));
  }
  return Status::ok();
}

Status read_trace_file(const std::string& path, Trace& out) {
  std::string text;
  if (Status st = read_text_file(path, text); !st.is_ok()) return st;
  return read_trace_json(text, out).prefixed(path);
}

}  // namespace stalldx
