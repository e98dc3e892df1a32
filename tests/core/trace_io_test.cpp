// Trace file: write -> read is lossless; the JSON has the lanes, flows and counters Perfetto needs;
// malformed input is a clear error with a position, never a crash.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "stalldx/trace_io.h"
#include "test_support.h"

namespace stalldx {
namespace {

Trace sample_trace() {
  Trace t;
  t.meta.origin_ns = 1'000'000'000'123;
  const std::int64_t o = t.meta.origin_ns;
  t.meta.host = t.meta.cpu_time = t.meta.cupti = true;
  t.meta.device = "NVIDIA H200";
  t.meta.config["workers"] = "16";
  t.meta.config["weird \"key\"\n"] = "tab\tvalue\\";
  t.meta.dropped_host = 3;
  t.meta.dropped_device = 1;
  t.meta.unmatched_device = 2;
  t.meta.steps_completed = 11;
  t.meta.host_facts = HostFacts{16, 12, 3.25, 0.5};
  t.threads = {{0, 4242, "consumer", 139876543210ull}, {1, 4243, "worker", 18446744073709551615ull}};
  const auto step = t.intern("step"), read = t.intern("read_file"), memcpy_api = t.intern("cudaMemcpyAsync"),
             h2d = t.intern("h2d"), q = t.intern("ready_batches");
  t.ranges.push_back({o + 1, o + 5'000'001, 0, step, Role::step, 0, 0, -1, 4'000'000, 2, 0});
  t.ranges.push_back({o + 10, o + 999, 1, read, Role::retrieval, -1, 0, 17, -1, -1, 40'000});
  t.ranges.push_back({o - 500, o + 3, 1, read, Role::decode, -1, 1, 18, 12, 0, 0});  // before the origin
  t.calls.push_back({o + 100, o + 200, 0, memcpy_api, 77, 0});
  t.activities.push_back({o + 250, o + 1'459'250, 0, 13, ActivityKind::memcpy_h2d, h2d, 77'070'336, MemKind::pinned, 77, 0});
  t.activities.push_back({o + 300, o + 400, -1, 0, ActivityKind::standin, step, 0, MemKind::none, 0, 3});
  t.counters.push_back({o + 7, q, 2});
  t.counters.push_back({o + 8, q, 0.1});
  return t;
}

TEST(TraceIo, RoundTripIsLossless) {
  const Trace t = sample_trace();
  std::ostringstream out;
  ASSERT_TRUE(write_trace_json(t, out).is_ok());
  Trace back;
  const Status st = read_trace_json(out.str(), back);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(back.names, t.names);
  EXPECT_EQ(back.threads, t.threads);
  EXPECT_EQ(back.ranges, t.ranges);
  EXPECT_EQ(back.calls, t.calls);
  EXPECT_EQ(back.activities, t.activities);
  EXPECT_EQ(back.counters, t.counters);
  EXPECT_EQ(back.meta, t.meta);
  EXPECT_TRUE(back == t);
}

TEST(TraceIo, JsonHasLanesFlowsAndCounters) {
  std::ostringstream out;
  ASSERT_TRUE(write_trace_json(sample_trace(), out).is_ok());
  const nlohmann::json j = nlohmann::json::parse(out.str());
  int process_names = 0, thread_names = 0, flow_s = 0, flow_f = 0, counters = 0, slices = 0;
  for (const auto& e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e.at("name") == "process_name") ++process_names;
    if (ph == "M" && e.at("name") == "thread_name") ++thread_names;
    if (ph == "s") ++flow_s;
    if (ph == "f") { ++flow_f; EXPECT_EQ(e.at("bp"), "e"); }
    if (ph == "C") ++counters;
    if (ph == "X") { ++slices; EXPECT_TRUE(e.contains("ts") && e.contains("dur") && e.contains("pid") && e.contains("tid")); }
  }
  EXPECT_EQ(process_names, 3);  // host, GPU 0, host stand-in
  EXPECT_EQ(thread_names, 4);   // 2 host threads, 1 stream, 1 stand-in lane
  EXPECT_EQ(flow_s, 1);         // the memcpy's runtime call -> its copy
  EXPECT_EQ(flow_f, 1);
  EXPECT_EQ(counters, 2);
  EXPECT_EQ(slices, 6);
  EXPECT_EQ(j.at("metadata").at("dropped").at("host"), 3);
  EXPECT_EQ(j.at("metadata").at("collectors").at("cupti"), true);
}

// The writer's one-event-per-line layout is read in chunks; any other layout of the same JSON (pretty
// printed, reordered keys, one line) is read whole and gives the same trace. A broken event inside the
// layout still names the byte where the JSON breaks.
TEST(TraceIo, AnyLayoutOfTheSameJsonReadsTheSame) {
  const Trace t = sample_trace();
  std::ostringstream out;
  ASSERT_TRUE(write_trace_json(t, out).is_ok());
  const std::string text = out.str();
  for (const int indent : {-1, 2}) {
    const std::string other = nlohmann::json::parse(text).dump(indent);
    Trace back;
    const Status st = read_trace_json(other, back);
    ASSERT_TRUE(st.is_ok()) << st.message();
    EXPECT_TRUE(back == t) << "indent " << indent;
  }
  std::string broken = text;
  const std::size_t p = broken.find("\"kind\":\"range\"");
  ASSERT_NE(p, std::string::npos);
  broken.insert(p, "\"oops\" ");
  Trace back;
  const Status st = read_trace_json(broken, back);
  EXPECT_FALSE(st.is_ok());
  const std::size_t at = st.message().find("at byte ");
  ASSERT_NE(at, std::string::npos) << st.message();
  const std::size_t byte = std::stoul(st.message().substr(at + 8));
  EXPECT_GE(byte, p) << st.message();  // where the stray string is, give or take the token read after it
  EXPECT_LE(byte, p + 20) << st.message();
  EXPECT_TRUE(back.ranges.empty());
}

TEST(TraceIo, TruncatedFileNamesItsPosition) {
  std::ostringstream out;
  ASSERT_TRUE(write_trace_json(sample_trace(), out).is_ok());
  const std::string text = out.str();
  for (std::size_t cut : {std::size_t{0}, std::size_t{1}, text.size() / 3, text.size() / 2, text.size() - 3}) {
    Trace t;
    const Status st = read_trace_json(text.substr(0, cut), t);
    ASSERT_FALSE(st.is_ok()) << "cut at " << cut;
    EXPECT_EQ(st.code(), Status::Code::parse_error);
    EXPECT_NE(st.message().find("byte"), std::string::npos) << st.message();
    EXPECT_TRUE(t.ranges.empty());
  }
}

TEST(TraceIo, WrongShapesAreClearErrors) {
  const char* cases[] = {
      "[]",
      "{\"traceEvents\":[]}",
      "{\"traceEvents\":[],\"metadata\":{}}",
      "{\"traceEvents\":[{\"ph\":\"X\"}],\"metadata\":{\"stalldx_version\":1}}",
  };
  for (const char* c : cases) {
    Trace t;
    const Status st = read_trace_json(c, t);
    EXPECT_FALSE(st.is_ok()) << c;
    EXPECT_FALSE(st.message().empty());
  }
}

TEST(TraceIo, HugeNumbersAreRefused) {
  std::ostringstream out;
  ASSERT_TRUE(write_trace_json(sample_trace(), out).is_ok());
  std::string text = out.str();
  const std::size_t p = text.find("\"ts\":");
  ASSERT_NE(p, std::string::npos);
  for (const char* huge : {"1e300", "123456789012345678901234567890", "-1e308"}) {
    std::string bad = text;
    const std::size_t end = bad.find_first_of(",}", p + 5);
    bad.replace(p + 5, end - (p + 5), huge);
    Trace t;
    const Status st = read_trace_json(bad, t);
    EXPECT_FALSE(st.is_ok()) << huge;
  }
}

TEST(TraceIo, CorpusOfBadTracesNeverCrashes) {
  for (const char* name : {"malformed.json", "truncated.json", "huge_numbers.json", "not_stalldx.json"}) {
    Trace t;
    const Status st = read_trace_file(std::string(STALLDX_TEST_DATA) + "/bad_traces/" + name, t);
    EXPECT_FALSE(st.is_ok()) << name;
    EXPECT_NE(st.message().find(name), std::string::npos) << st.message();
  }
}

TEST(TraceIo, EventsWhollyBeforeTheOriginAreSkippedAndCounted) {
  Trace t = sample_trace();
  const std::int64_t o = t.meta.origin_ns;
  t.ranges.push_back({o - 9000, o - 8000, 1, 0, Role::decode, -1, 1, 18, -1, -1, 0});
  t.counters.push_back({o - 1, 0, 1.0});
  std::ostringstream out;
  ASSERT_TRUE(write_trace_json(t, out).is_ok());
  Trace back;
  ASSERT_TRUE(read_trace_json(out.str(), back).is_ok());
  EXPECT_EQ(back.meta.skipped_events, 2u);
  EXPECT_EQ(back.ranges.size(), t.ranges.size() - 1);
}

TEST(TraceIo, GzipTracesAreReadAndOtherFormatsNamed) {
  const std::string dir = stalldx::testing::temp_dir("gz");
  ASSERT_TRUE(write_trace_file(sample_trace(), dir + "/t.json").is_ok());
  ASSERT_EQ(std::system(("gzip -k " + dir + "/t.json").c_str()), 0);
  Trace back;
  const Status st = read_trace_file(dir + "/t.json.gz", back);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_TRUE(back == sample_trace());
  const std::string gz = stalldx::testing::read_file(dir + "/t.json.gz");
  stalldx::testing::write_file(dir + "/cut.json.gz", gz.substr(0, gz.size() / 2));
  EXPECT_FALSE(read_trace_file(dir + "/cut.json.gz", back).is_ok());
  stalldx::testing::write_file(dir + "/kineto.json", R"({"schemaVersion": 1, "deviceProperties": [], "traceEvents": []})");
  const Status k = read_trace_file(dir + "/kineto.json", back);
  EXPECT_EQ(k.code(), Status::Code::invalid_argument);
  EXPECT_NE(k.message().find("Kineto"), std::string::npos) << k.message();
  stalldx::testing::write_file(dir + "/other.json", R"({"traceEvents": [{"ph": "X", "ts": 1, "dur": 2, "name": "x"}]})");
  EXPECT_NE(read_trace_file(dir + "/other.json", back).message().find("another tool"), std::string::npos);
}

TEST(TraceIo, WriteToUnwritablePathFails) {
  EXPECT_FALSE(write_trace_file(sample_trace(), "/nonexistent-dir/trace.json").is_ok());
  const std::string dir = stalldx::testing::temp_dir("trace");
  EXPECT_TRUE(write_trace_file(sample_trace(), dir + "/t.json").is_ok());
}

}  // namespace
}  // namespace stalldx
