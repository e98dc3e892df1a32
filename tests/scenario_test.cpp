// Verdict accuracy on induced stalls: the CPU-only scenarios run live, and the traces recorded on the
// H200 (tests/data/h200) are diagnosed; each must give the induced verdict on >= 95% of steady steps.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "stalldx/diagnose/evaluation.h"
#include "stalldx/diagnose/whatif.h"
#include "stalldx/trace_io.h"
#include "test_dataset.h"

namespace stalldx::diagnose {
namespace {

TEST(Expectations, ParseAndAlternate) {
  Expectation e;
  ASSERT_TRUE(Expectation::parse("alternate:4:3=retrieval:device-bound", e).is_ok());
  EXPECT_EQ(e.expected(7), Verdict::retrieval);
  EXPECT_EQ(e.expected(8), Verdict::device_bound);
  ASSERT_TRUE(Expectation::parse("consumer-bound", e).is_ok());  // the stand-in's spelling of the same verdict
  EXPECT_EQ(e.expected(1), Verdict::device_bound);
  EXPECT_FALSE(Expectation::parse("mixed", e).is_ok()) << "not a class a scenario can induce";
  EXPECT_FALSE(Expectation::parse("fast", e).is_ok());
  EXPECT_FALSE(Expectation::parse("alternate:0:0=retrieval:decoding", e).is_ok());
}

TEST(Scenarios, CpuOnlyScenariosGiveTheInducedVerdict) {
  const std::string out = stalldx::testing::temp_dir("eval");
  const std::string cmd = fmt::format("cd {} && {} eval configs/scenarios-cpu.tsv --data {} --out {} > {}/log.txt 2>&1", STALLDX_SOURCE_DIR,
                                      STALLDX_BINARY, stalldx::testing::small_dataset(), out, out);
  const int rc = std::system(cmd.c_str());
  const std::string log = stalldx::testing::read_file(out + "/log.txt");
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << log;  // eval names the scenario and the steps that missed
  const auto j = nlohmann::json::parse(stalldx::testing::read_file(out + "/confusion.json"));
  EXPECT_EQ(j.size(), 6u);
  for (const auto& s : j) {
    EXPECT_GE(s.at("accuracy").get<double>(), 0.95) << s.at("scenario") << ": " << s.at("misses").dump(1);
    EXPECT_GT(s.at("steady_steps").get<int>(), 0);
  }
  // The advice that follows: a starved host is never told to add workers.
  Trace t;
  ASSERT_TRUE(read_trace_file(out + "/cpu-oversubscribed.json", t).is_ok());
  const Report rep = diagnose(t);
  bool oversubscribed = false, more_workers = false;
  for (const Advised& a : rep.summary.advice) {
    oversubscribed |= a.kind == Advice::oversubscribed;
    more_workers |= a.kind == Advice::more_workers;
  }
  EXPECT_TRUE(oversubscribed);
  EXPECT_FALSE(more_workers);
}

TEST(Scenarios, RecordedH200TracesGiveTheInducedVerdict) {
  const std::string dir = std::string(STALLDX_TEST_DATA) + "/h200";
  std::ifstream in(dir + "/expected.tsv");
  if (!in) GTEST_SKIP() << "no recorded H200 traces in " << dir;
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string name, spec;
    std::getline(ss, name, '\t');
    std::getline(ss, spec, '\t');
    Expectation e;
    ASSERT_TRUE(Expectation::parse(spec, e).is_ok()) << line;
    Trace t;
    const Status st = read_trace_file(dir + "/" + name + ".json", t);
    ASSERT_TRUE(st.is_ok()) << st.message();
    EXPECT_TRUE(t.meta.cupti) << name << " was not recorded with CUPTI";
    const Report rep = diagnose(t);
    const ScenarioScore s = score(name, rep, e);
    EXPECT_GT(s.steady, 0) << name;
    std::string misses;
    for (const std::string& m : s.misses) misses += "\n  " + m;
    EXPECT_GE(s.accuracy, 0.95) << name << misses;
    EXPECT_LT(std::filesystem::file_size(dir + "/" + name + ".json"), 1u << 20) << name << " is over 1 MB";
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(Scenarios, AgreementComparesStepsByNumberAndClass) {
  const std::string dir = std::string(STALLDX_TEST_DATA) + "/h200";
  Trace retrieval, device;
  ASSERT_TRUE(read_trace_file(dir + "/retrieval-latency.json", retrieval).is_ok());
  ASSERT_TRUE(read_trace_file(dir + "/device-bound.json", device).is_ok());
  const Report r = diagnose(retrieval), d = diagnose(device);
  const Agreement same = agreement("same", r, r);
  EXPECT_GT(same.steps, 0);
  EXPECT_EQ(same.same, same.steps);
  EXPECT_TRUE(same.differ.empty());
  const Agreement other = agreement("other", r, d);
  EXPECT_GT(other.steps, 0) << "the two traces share steady step numbers";
  EXPECT_LT(other.rate, 0.5);
  ASSERT_FALSE(other.differ.empty());
  EXPECT_NE(other.differ.front().find("native retrieval, recorded device-bound"), std::string::npos) << other.differ.front();
}

}  // namespace
}  // namespace stalldx::diagnose

namespace stalldx::diagnose {
namespace {
// Before: --what-if ran a second diagnosis with the default thresholds, so it ignored --warmup.
TEST(WhatIf, HonoursTheUsersWarmup) {
  Trace t;
  ASSERT_TRUE(read_trace_file(std::string(STALLDX_TEST_DATA) + "/h200/decoding-few-workers.json", t).is_ok());
  Thresholds late;
  late.warmup_steps = 8;
  const StageCosts by_default = measure_stage_costs(t), with_warmup = measure_stage_costs(t, diagnose(t, late), late);
  EXPECT_EQ(with_warmup.decode_cpu_ms, measure_stage_costs(t, late).decode_cpu_ms);
  EXPECT_NE(by_default.decode_cpu_ms, with_warmup.decode_cpu_ms) << "the warm-up batches' decodes left out";
}
}  // namespace
}  // namespace stalldx::diagnose

#include "stalldx/record/sampling.h"

namespace stalldx::diagnose {
namespace {
// The sampled rules on real device traces (H200, tests/data/h200): each scenario's full trace diagnosed
// as recorded and as a recording sampled 3/6 and 2/5 would have seen it (record::sampled_view: calls and
// device work kept only inside the windows), step by step — the rules for steps outside the windows
// (host records, the wait bounded by the device's own work a step, carried verdicts) against the full
// diagnosis on the very same steps.
TEST(SampledRules, RealDeviceTracesSeenSampledKeepTheirVerdicts) {
  std::ifstream list(std::string(STALLDX_TEST_DATA) + "/h200/expected.tsv");
  std::string line;
  int traces = 0, outside_steps = 0;
  while (std::getline(list, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::string name = line.substr(0, line.find('\t'));
    Trace t;
    ASSERT_TRUE(read_trace_file(std::string(STALLDX_TEST_DATA) + "/h200/" + name + ".json", t).is_ok()) << name;
    const Report full = diagnose(t);
    for (const record::SamplePlan plan : {record::SamplePlan{0, 3, 6}, record::SamplePlan{0, 2, 5}}) {
      const Report seen = diagnose(record::sampled_view(t, plan));
      EXPECT_TRUE(seen.coverage.sampled) << name;
      const Agreement a = agreement(name, full, seen);
      EXPECT_GE(a.rate, 0.95) << name << " " << plan.words() << ": " << a.same << " of " << a.steps << "; "
                              << (a.differ.empty() ? "" : a.differ.front());
      int outside = 0;
      for (const StepDiagnosis& s : seen.steps) outside += !s.warmup && s.basis != StepBasis::device;
      outside_steps += outside;
      std::printf("%-28s %-28s %d of %d (%d outside the windows)\n", name.c_str(), plan.words().c_str(), a.same, a.steps, outside);
    }
    ++traces;
  }
  EXPECT_GE(traces, 10);
  EXPECT_GE(outside_steps, 40) << "the rules for steps outside the windows are what is tested";
}
}  // namespace
}  // namespace stalldx::diagnose
