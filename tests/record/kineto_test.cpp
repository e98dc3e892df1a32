// The Kineto reader: real torch.profiler traces from the H200 give the verdicts their records support
// (tests/data/kineto/expected.tsv), both schemas read, a copy counts only when it copied, and bad input
// gives a message or lowered coverage — never a crash.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/record/kineto.h"
#include "stalldx/record/merge.h"
#include "stalldx/record/step_inference.h"
#include "stalldx/trace_io.h"
#include "test_support.h"

namespace stalldx::record {
namespace {

const std::string kData = std::string(STALLDX_TEST_DATA) + "/kineto/";

TEST(Kineto, RecordedH200TracesGiveTheVerdictTheirRecordsSupport) {
  std::ifstream in(kData + "expected.tsv");
  ASSERT_TRUE(in) << "missing " << kData << "expected.tsv";
  std::string line;
  int traces = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::string file, expected;
    std::getline(f, file, '\t');
    std::getline(f, expected, '\t');
    Trace t;
    KinetoReport rep;
    bool kineto = false;
    ASSERT_TRUE(read_any_trace(kData + file, RoleMap::defaults(), t, rep, kineto).is_ok()) << file;
    EXPECT_TRUE(kineto);
    EXPECT_EQ(rep.not_understood, 0u) << file;
    const diagnose::Report r = diagnose::diagnose(t);
    int steady = 0, right = 0;
    std::string misses;
    for (const diagnose::StepDiagnosis& s : r.steps) {
      if (s.warmup) continue;
      ++steady;
      const std::string got = diagnose::verdict_name(s.verdict, false);
      if (got == expected) ++right;
      else misses += fmt::format("\n  step {}: {} ({})", s.step, got, s.evidence);
    }
    ASSERT_GT(steady, 0) << file;
    EXPECT_GE(right, 0.95 * steady) << file << ": " << right << " of " << steady << " steps " << expected << misses;
    ++traces;
  }
  EXPECT_EQ(traces, 6);  // every row of expected.tsv was read
}

// 16 workers on 16 vCPUs (8 steps), and 12 workers over 40 steps: the GPU is busy ~90% and the rest is the
// loop's own host work; whatever each step's verdict, none blames the input pipeline, and the launch pace
// shows the host behind the device.
TEST(Kineto, Fp32LoopsWithEnoughWorkersNeverBlameTheInput) {
  for (const auto& [file, steps] : {std::pair<std::string, std::size_t>{"h200-fp32-w16.pt.trace.json.gz", 8},
                                    std::pair<std::string, std::size_t>{"h200-fp32-w12-long.pt.trace.json.gz", 40}}) {
    Trace t;
    KinetoReport rep;
    bool kineto = false;
    ASSERT_TRUE(read_any_trace(kData + file, RoleMap::defaults(), t, rep, kineto).is_ok()) << file;
    const diagnose::Report r = diagnose::diagnose(t);
    ASSERT_EQ(r.steps.size(), steps) << file;
    for (const diagnose::StepDiagnosis& s : r.steps) {
      EXPECT_TRUE(s.verdict == diagnose::Verdict::submission || s.verdict == diagnose::Verdict::device_bound)
          << file << " step " << s.step << ": " << s.evidence;
      if (s.verdict == diagnose::Verdict::submission && !s.causes.empty() && s.causes.front().cause == diagnose::Cause::launch_rate) {
        EXPECT_GT(s.launch.host_us_between_launches, s.launch.device_us_per_kernel) << file << " step " << s.step;
      }
    }
  }
}

// Slow reads in 8 DataLoader workers: each worker builds a whole batch, so 8 batches arrive together and
// one step in 8 waits seconds for the next burst (input, split unknown); the steps between are served
// from the burst and are never blamed on the input.
TEST(Kineto, BatchesArrivingInBurstsBlameOnlyTheStepsThatWaited) {
  Trace t;
  KinetoReport rep;
  bool kineto = false;
  ASSERT_TRUE(read_any_trace(kData + "h200-slow-reads-w8.pt.trace.json.gz", RoleMap::defaults(), t, rep, kineto).is_ok());
  const diagnose::Report r = diagnose::diagnose(t);
  ASSERT_EQ(r.steps.size(), 24u);
  for (const diagnose::StepDiagnosis& s : r.steps) {
    const bool waited = s.step == 8 || s.step == 16 || s.step == 24;
    EXPECT_EQ(s.verdict == diagnose::Verdict::input, waited) << "step " << s.step << ": " << s.evidence;
    if (waited) {
      EXPECT_GT(s.stall_ms, 1000.0) << "step " << s.step;
    }
  }
}

// Kineto's own layout (an event per indented block) is read in runs of whole events; the same events in
// any other layout are read as one document. Both give the same trace; a Kineto-layout file cut short is
// still refused with the whole-document parser's message.
TEST(Kineto, ItsOwnLayoutIsReadInRunsAndGivesTheSameTrace) {
  std::string compact;
  ASSERT_TRUE(read_text_file(kData + "h200-decoding-w1.pt.trace.json.gz", compact).is_ok());
  const nlohmann::json doc = nlohmann::json::parse(compact);
  std::string laid = "{\n  \"schemaVersion\": 1,\n";
  for (const auto& [key, value] : doc.items())  // the other top-level keys (distributedInfo, baseTimeNanoseconds) as Kineto puts them
    if (key != "traceEvents" && key != "schemaVersion") laid += "  \"" + key + "\": " + value.dump() + ",\n";
  laid += "  \"traceEvents\": [\n";
  bool first = true;
  for (const nlohmann::json& ev : doc.at("traceEvents")) {
    laid += first ? "  {\n    " : ",\n  {\n    ";
    first = false;
    const std::string body = ev.dump();
    laid += body.substr(1, body.size() - 2);  // the members, on one line
    laid += "\n  }";
  }
  laid += "\n  ],\n  \"traceName\": \"test\"\n}\n";
  ASSERT_GT(laid.size(), 3u << 20) << "several runs of 1 MB";
  Trace whole, runs;
  KinetoReport rw, rr;
  ASSERT_TRUE(read_kineto_json(compact, RoleMap::defaults(), whole, rw).is_ok());
  ASSERT_TRUE(read_kineto_json(laid, RoleMap::defaults(), runs, rr).is_ok());
  EXPECT_EQ(rw.runs, 0u);  // compact JSON: one document
  EXPECT_GE(rr.runs, 3u);   // Kineto's layout: runs of ~1 MB
  EXPECT_EQ(rr.events, rw.events);
  EXPECT_EQ(rr.not_understood, rw.not_understood);
  EXPECT_TRUE(runs == whole);
  const Status cut = read_kineto_json(laid.substr(0, laid.size() / 2), RoleMap::defaults(), runs, rr);
  EXPECT_FALSE(cut.is_ok());
  EXPECT_NE(cut.message().find("cut short"), std::string::npos) << cut.message();
}

// A minimal current-schema document: 4 steps, each waits 8 ms on a multiprocess loader, copies (an
// aten::copy_ that issued cudaMemcpyAsync), launches a 2 ms kernel; a CPU-side aten::copy_ inside the
// wait did not copy to the device and must not count as submission.
std::string synthetic(bool old_schema, bool with_gpu = true, bool with_steps = true, int ranks = 1) {
  std::string ev;
  auto add = [&](const std::string& e) { ev += (ev.empty() ? "" : ",\n") + e; };
  const char* cpu_cat = old_schema ? "Operator" : "cpu_op";
  const char* rt_cat = old_schema ? "Runtime" : "cuda_runtime";
  const char* k_cat = old_schema ? "Kernel" : "kernel";
  const char* m_cat = old_schema ? "Memcpy" : "gpu_memcpy";
  int corr = 1;
  for (int rank = 0; rank < ranks; ++rank) {
    const int pid = 100 + rank;
    for (int s = 0; s < 4; ++s) {
      const double t0 = 1000.0 + s * 10600.0;  // µs: contiguous steps, as ProfilerStep#N are
      if (with_steps) add(fmt::format(R"J({{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{}","pid":{},"tid":{},"ts":{},"dur":10600}})J", s, pid, pid, t0));
      add(fmt::format(R"J({{"ph":"X","cat":"user_annotation","name":"enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__","pid":{},"tid":{},"ts":{},"dur":8000}})J", pid, pid, t0 + 10));
      add(fmt::format(R"J({{"ph":"X","cat":"{}","name":"aten::copy_","pid":{},"tid":{},"ts":{},"dur":100}})J", cpu_cat, pid, pid, t0 + 100));
      add(fmt::format(R"J({{"ph":"X","cat":"{}","name":"aten::copy_","pid":{},"tid":{},"ts":{},"dur":300}})J", cpu_cat, pid, pid, t0 + 8100));
      add(fmt::format(R"J({{"ph":"X","cat":"{}","name":"cudaMemcpyAsync","pid":{},"tid":{},"ts":{},"dur":200,"args":{{"correlation":{}}}}})J", rt_cat, pid, pid, t0 + 8150, corr));
      if (with_gpu)
        add(fmt::format(R"J({{"ph":"X","cat":"{}","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":7,"ts":{},"dur":150,"args":{{"device":0,"stream":7,"correlation":{},"bytes":1048576}}}})J", m_cat, t0 + 8200, corr));
      ++corr;
      add(fmt::format(R"J({{"ph":"X","cat":"{}","name":"cudaLaunchKernel","pid":{},"tid":{},"ts":{},"dur":10,"args":{{"correlation":{}}}}})J", rt_cat, pid, pid, t0 + 8500, corr));
      if (with_gpu)
        add(fmt::format(R"J({{"ph":"X","cat":"{}","name":"conv","pid":0,"tid":7,"ts":{},"dur":2000,"args":{{"device":0,"stream":7,"correlation":{}}}}})J", k_cat, t0 + 8520, corr));
      ++corr;
      add(fmt::format(R"J({{"ph":"s","id":{},"pid":{},"tid":{},"ts":{},"cat":"ac2g","name":"ac2g"}})J", corr, pid, pid, t0));
    }
  }
  add(R"J({"ph":"Q","name":"mystery"})J");  // a phase nobody knows: counted, not fatal
  const std::string header = old_schema ? R"("schemaVersion":1,)" : R"("schemaVersion":1,"baseTimeNanoseconds":1790857026000000000,)";
  return "{" + header + "\"traceEvents\":[\n" + ev + "\n]}";
}

TEST(Kineto, BothSchemasReadAndACopyCountsOnlyWhenItCopied) {
  for (bool old_schema : {false, true}) {
    const std::string doc = synthetic(old_schema);
    ASSERT_TRUE(looks_like_kineto(doc));
    Trace t;
    KinetoReport rep;
    ASSERT_TRUE(read_kineto_json(doc, RoleMap::defaults(), t, rep).is_ok()) << old_schema;
    EXPECT_EQ(rep.not_understood, 1u);
    EXPECT_EQ(t.activities.size(), 8u);
    int steps = 0, waits = 0, submits = 0;
    for (const HostRange& r : t.ranges) {
      steps += r.role == Role::step;
      waits += r.role == Role::wait_batch;
      submits += r.role == Role::submit && t.name(r.name) == "aten::copy_";
    }
    EXPECT_EQ(steps, 4);
    EXPECT_EQ(waits, 4);
    EXPECT_EQ(submits, 4) << "only the copy that issued cudaMemcpyAsync";
    for (const DeviceActivity& a : t.activities) {
      EXPECT_GE(a.step, 0);
      if (a.kind == ActivityKind::memcpy_h2d) {
        EXPECT_EQ(a.host_mem, MemKind::pinned);
      }
    }
    const diagnose::Report r = diagnose::diagnose(t);
    for (const diagnose::StepDiagnosis& s : r.steps) EXPECT_EQ(s.verdict, diagnose::Verdict::input) << s.evidence << "\n" << s.next_question;
    EXPECT_NE(r.steps[0].next_question.find("annotate __getitem__"), std::string::npos);
  }
}

// A torch built without Kineto (Debian's python3-torch 1.13, CPU) writes the legacy autograd profiler's
// trace: a bare JSON array of events with no categories, pid "CPU functions". It is read as CPU ops — the
// ProfilerStep#N ranges are the steps, the DataLoader's __next__ the waits (a 3 ms read per sample, 2
// workers: the loop waited 37 % of its steps). Refused before: "the top level is not a JSON object".
TEST(Kineto, TheLegacyProfilersBareArrayIsReadAsCpuOps) {
  Trace t;
  KinetoReport rep;
  bool kineto = false;
  ASSERT_TRUE(read_any_trace(kData + "legacy-autograd-cpu-torch113.trace.json.gz", RoleMap::defaults(), t, rep, kineto).is_ok());
  EXPECT_TRUE(kineto);
  EXPECT_TRUE(rep.array_form);
  EXPECT_EQ(rep.not_understood, 0u);
  bool said = false;
  for (const std::string& n : rep.notes) said = said || n.find("bare array") != std::string::npos;
  EXPECT_TRUE(said);
  const diagnose::Report r = diagnose::diagnose(t);
  ASSERT_EQ(r.steps.size(), 8u);
  int waited = 0;
  for (const diagnose::StepDiagnosis& st : r.steps) waited += st.stall_ms > 1.0;
  EXPECT_EQ(waited, 8);
  EXPECT_GT(r.summary.headline.input, 0.25) << r.summary.headline.text;
  // An empty array is a trace with nothing in it, not an error.
  ASSERT_TRUE(read_kineto_json("[]", RoleMap::defaults(), t, rep).is_ok());
  EXPECT_TRUE(t.ranges.empty());
}

TEST(Kineto, BadInputGivesAMessageOrLowerCoverage) {
  Trace t;
  KinetoReport rep;
  const std::string doc = synthetic(false);
  const Status cut = read_kineto_json(doc.substr(0, doc.size() / 2), RoleMap::defaults(), t, rep);
  EXPECT_FALSE(cut.is_ok());
  EXPECT_NE(cut.message().find("cut short"), std::string::npos) << cut.message();
  EXPECT_FALSE(read_kineto_json(R"J({"schemaVersion":1})J", RoleMap::defaults(), t, rep).is_ok());

  ASSERT_TRUE(read_kineto_json(synthetic(false, true, false), RoleMap::defaults(), t, rep).is_ok());
  EXPECT_NE(rep.notes.front().find("no ProfilerStep"), std::string::npos);
  EXPECT_TRUE(diagnose::diagnose(t).steps.empty());

  ASSERT_TRUE(read_kineto_json(synthetic(false, false), RoleMap::defaults(), t, rep).is_ok());
  bool said = false;
  for (const std::string& n : rep.notes) said = said || n.find("no GPU events") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_EQ(diagnose::diagnose(t).steps.front().verdict, diagnose::Verdict::no_device_records);

  ASSERT_TRUE(read_kineto_json(synthetic(false, true, true, 2), RoleMap::defaults(), t, rep).is_ok());
  said = false;
  for (const std::string& n : rep.notes) said = said || n.find("one trace per rank") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_EQ(diagnose::diagnose(t).steps.size(), 4u);  // one rank's steps

  bool kineto = true;
  const std::string dir = stalldx::testing::temp_dir("kineto");
  stalldx::testing::write_file(dir + "/empty.json", "");
  EXPECT_FALSE(read_any_trace(dir + "/empty.json", RoleMap::defaults(), t, rep, kineto).is_ok());
}

}  // namespace
}  // namespace stalldx::record

namespace stalldx::record {
namespace {
// Real H200 loops with every range taken away — no ProfilerStep, no DataLoader op, nothing the program
// said, as a C++ or JAX loop without NVTX would give: the CUDA period alone finds the same steps (one per
// batch copy; a batch copied sample by sample, 128 copies a step, is one step, not 128), and the
// verdicts follow the records where they can: the idle before each batch copy is input (not split), the
// per-sample copies submission, the 448 px loop device-bound. What no record can tell apart: in the
// launch-bound 40-step loop, 8 steps whose loss is read and logged before the next batch copy (10 ms of
// the loop's own Python, inside its "sync" range in the original) read as input or mixed.
TEST(Kineto, WithEveryRangeTakenAwayTheCudaPeriodFindsTheSameSteps) {
  struct Case {
    const char* file;
    const char* verdict;  // on every step but at most `misses` (empty: the original's verdict, step by step)
    int misses;
  };
  for (const Case& c : {Case{"h200-per-sample-copies.pt.trace.json.gz", "submission", 0}, Case{"h200-decoding-w1.pt.trace.json.gz", "input", 1},
                        Case{"h200-w0-slow-reads.pt.trace.json.gz", "input", 1}, Case{"h200-w0-decoding.pt.trace.json.gz", "input", 1},
                        Case{"h200-device-bound-448.pt.trace.json.gz", "device-bound", 0}, Case{"h200-fp32-w16.pt.trace.json.gz", "", 0},
                        Case{"h200-slow-reads-w8.pt.trace.json.gz", "", 1}, Case{"h200-fp32-w12-long.pt.trace.json.gz", "", 8}}) {
    Trace t;
    KinetoReport rep;
    bool kineto = false;
    ASSERT_TRUE(read_any_trace(kData + c.file, RoleMap::defaults(), t, rep, kineto).is_ok()) << c.file;
    const diagnose::Report orig = diagnose::diagnose(t);
    t.ranges.clear();
    for (RuntimeCall& call : t.calls) call.step = -1;
    for (DeviceActivity& a : t.activities) a.step = -1;
    const StepEvidence ev = infer_steps(t);
    EXPECT_EQ(ev.rule, StepRule::cuda_period) << c.file;
    assign_steps(t);
    const diagnose::Report r = diagnose::diagnose(t);
    ASSERT_EQ(r.steps.size(), orig.steps.size()) << c.file << ": " << ev.found;
    int misses = 0;
    std::string why;
    for (std::size_t i = 0; i < r.steps.size(); ++i) {
      const std::string want = *c.verdict ? c.verdict : diagnose::verdict_name(orig.steps[i].verdict, false);
      const std::string got = diagnose::verdict_name(r.steps[i].verdict, false);
      if (got != want) {
        ++misses;
        why += fmt::format("\n  step {}: {} for {} ({})", i, got, want, r.steps[i].evidence);
      }
    }
    EXPECT_LE(misses, c.misses) << c.file << why;
  }
  const std::string per_sample = [] {
    Trace t;
    KinetoReport rep;
    bool kineto = false;
    (void)read_any_trace(kData + "h200-per-sample-copies.pt.trace.json.gz", RoleMap::defaults(), t, rep, kineto);
    t.ranges.clear();
    return infer_steps(t).found;
  }();
  EXPECT_NE(per_sample.find("(1024 copies in 8 bursts"), std::string::npos) << per_sample;
}
}  // namespace
}  // namespace stalldx::record
