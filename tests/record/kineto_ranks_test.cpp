// torch.profiler traces of one job, one per rank (HTA's multi-rank input): distributedInfo makes each a
// rank's trace; the ranks are diagnosed across, the slow loader's rank named; clocks hours apart are
// aligned from the collectives' ends (or the report says they could not be).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include "stalldx/diagnose/ranks.h"
#include "stalldx/record/kineto.h"
#include "stalldx/record/role_map.h"
#include "test_support.h"

namespace stalldx::record {
namespace {

// One rank's trace: 12 steps of 50 ms; a DataLoader wait (rank `slow`: 30 ms, others 1 ms), then the
// gradient all-reduce ("nccl:all_reduce"), which ends at the same moment on every rank. `shift_us` moves
// every timestamp (a host whose clock is elsewhere); `jitter_us` spreads the all-reduce's ends.
std::string rank_trace(int rank, int world, int slow, double shift_us, std::int64_t base_ns = 1'735'689'600'000'000'000,
                       double jitter_us = 0, unsigned seed = 1) {
  std::mt19937 rng(seed + static_cast<unsigned>(rank));
  std::uniform_real_distribution<double> jitter(-jitter_us, jitter_us);
  std::string ev;
  const auto add = [&](const char* cat, const std::string& name, double ts, double dur) {
    ev += fmt::format("{}{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": 100, \"tid\": 100, \"ts\": {:.3f}, \"dur\": {:.3f}}}",
                      ev.empty() ? "" : ",\n", cat, name, ts + shift_us, dur);
  };
  for (int s = 0; s < 12; ++s) {
    const double t = 1'000'000 + s * 50'000.0;
    add("user_annotation", fmt::format("ProfilerStep#{}", s), t, 50'000);
    const double wait = rank == slow ? 30'000 : 1'000;
    add("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t + 10, wait);
    const double arrive = t + wait + 4'000, end = t + 40'000 + jitter(rng);
    add("cpu_op", "nccl:all_reduce", arrive, end - arrive);
  }
  return fmt::format(
      "{{\"schemaVersion\": 1, \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, \"world_size\": {}}}, "
      "\"baseTimeNanoseconds\": {}, \"traceEvents\": [\n{}\n  ]}}",
      rank, world, base_ns, ev);
}

diagnose::CrossRankReport across(const std::vector<std::string>& texts) {
  diagnose::CrossRankAccumulator acc;
  diagnose::Thresholds th;
  th.warmup_steps = 1;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    Trace t;
    KinetoReport rep;
    EXPECT_TRUE(read_kineto_json(texts[i], RoleMap::defaults(), t, rep).is_ok());
    diagnose::RankSteps r;
    const Status st = diagnose::rank_steps(t, fmt::format("rank{}.pt.trace.json", i), th, r);
    EXPECT_TRUE(st.is_ok()) << st.message();
    EXPECT_TRUE(acc.add(r).is_ok());
  }
  return acc.finish();
}

int steps_named(const diagnose::CrossRankReport& r, int rank) {
  int n = 0;
  for (const diagnose::CrossStep& s : r.steps) n += s.straggler == rank && s.straggler_verdict == diagnose::Verdict::input;
  return n;
}

TEST(KinetoRanks, DistributedInfoMakesEachTraceARankAndTheSlowLoaderIsNamed) {
  const diagnose::CrossRankReport r = across({rank_trace(0, 3, 1, 0), rank_trace(1, 3, 1, 0), rank_trace(2, 3, 1, 0)});
  EXPECT_EQ(r.world_size, 3);
  EXPECT_TRUE(r.missing.empty());
  EXPECT_EQ(r.run_straggler, 1);
  EXPECT_EQ(steps_named(r, 1), static_cast<int>(r.steps.size())) << "the straggler's own cause: it waited on its loader";
  EXPECT_FALSE(r.clocks_disagree);
  for (const std::string& n : r.notes) EXPECT_EQ(n.find("clock"), std::string::npos) << n;
}

TEST(KinetoRanks, ARankWhoseClockIsAnHourAheadIsAlignedFromTheCollectivesEnds) {
  const double hour_us = 3'600e6;
  const diagnose::CrossRankReport r = across({rank_trace(0, 2, 1, 0), rank_trace(1, 2, 1, hour_us, 1'735'689'600'000'000'000, 200)});
  EXPECT_EQ(r.run_straggler, 1);
  EXPECT_EQ(steps_named(r, 1), static_cast<int>(r.steps.size()));
  bool said = false;
  for (const std::string& n : r.notes) said = said || (n.find("rank 1's clock is 3600 s ahead of rank 0's") != std::string::npos && n.find("aligned") != std::string::npos);
  EXPECT_TRUE(said) << (r.notes.empty() ? "" : r.notes.front());
  // Different base times, timestamps consistent with them: the bases align the ranks, nothing to estimate.
  const diagnose::CrossRankReport b = across({rank_trace(0, 2, 1, 0), rank_trace(1, 2, 1, hour_us, 1'735'689'600'000'000'000 - 3'600'000'000'000)});
  EXPECT_EQ(b.run_straggler, 1);
  for (const std::string& n : b.notes) EXPECT_EQ(n.find("clock"), std::string::npos) << n;
}

TEST(KinetoRanks, EndsThatDoNotAgreeOnAnOffsetAreNotTrustedAndTheReportSaysSo) {
  // Rank 1 an hour away, and its all-reduce ends scattered over ±20 ms: no single offset explains them.
  const diagnose::CrossRankReport r = across({rank_trace(0, 2, 1, 0), rank_trace(1, 2, 1, 3'600e6, 1'735'689'600'000'000'000, 40'000, 7)});
  bool said = false;
  for (const std::string& n : r.notes) said = said || n.find("could not be aligned") != std::string::npos;
  EXPECT_TRUE(said || r.clocks_disagree);
}

// `stalldx diagnose DIR`: a folder of one job's traces (tensorboard_trace_handler writes one per rank).
TEST(KinetoRanks, AFolderOfRankTracesIsDiagnosedAcross) {
  const std::string dir = stalldx::testing::temp_dir("kineto-ranks");
  for (int r = 0; r < 3; ++r) {
    std::filesystem::create_directories(dir + "/job");
    std::ofstream(fmt::format("{}/job/host_{}.1234.pt.trace.json", dir, r)) << rank_trace(r, 3, 2, r == 1 ? 7'200e6 : 0);
  }
  std::ofstream(dir + "/job/notes.txt") << "not a trace";
  const int rc = std::system(fmt::format("{} diagnose {}/job --json > {}/cross.json 2> {}/err.txt", STALLDX_BINARY, dir, dir, dir).c_str());
  ASSERT_EQ(WEXITSTATUS(rc), 0) << stalldx::testing::read_file(dir + "/err.txt");
  const auto j = nlohmann::json::parse(stalldx::testing::read_file(dir + "/cross.json"));
  EXPECT_EQ(j["run_straggler"], 2) << j.dump(1);
  EXPECT_EQ(j["world_size"], 3);
  bool aligned = false;
  for (const auto& n : j["notes"]) aligned = aligned || n.get<std::string>().find("rank 1's clock is 7200 s ahead") != std::string::npos;
  EXPECT_TRUE(aligned) << j["notes"].dump();
  const int empty = std::system(fmt::format("mkdir -p {0}/empty && {1} diagnose {0}/empty > /dev/null 2> {0}/empty.txt", dir, STALLDX_BINARY).c_str());
  EXPECT_EQ(WEXITSTATUS(empty), 2);
  EXPECT_NE(stalldx::testing::read_file(dir + "/empty.txt").find("a folder with no trace in it"), std::string::npos);
}

// A real job: `torchrun --nproc-per-node 2` DDP ResNet-50 over gloo on one H100 (examples/torch/train_ddp.py
// --kineto-dir, 2026-12-05 23:54 UTC), rank 1's reads slowed 40 ms a file or not; each trace cut to 8 steady
// steps (`diagnose --trimmed`) and gzipped: tests/data/kineto-ddp-h100/. DDP's all-reduce runs in C++ over
// gloo and leaves no collective op, so the ranks' arrivals are their batch-ready times.
nlohmann::json diagnose_ddp_job(const std::string& name) {
  const std::string dir = stalldx::testing::temp_dir("kineto-ddp-" + name);
  const std::string data = fmt::format("{}/kineto-ddp-h100/{}", STALLDX_TEST_DATA, name);
  const int rc = std::system(fmt::format("{0} diagnose {1}.rank0.pt.trace.json.gz {1}.rank1.pt.trace.json.gz --json > {2}/cross.json 2> {2}/err.txt",
                                         STALLDX_BINARY, data, dir).c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 0) << stalldx::testing::read_file(dir + "/err.txt");
  return nlohmann::json::parse(stalldx::testing::read_file(dir + "/cross.json"));
}
TEST(KinetoRanks, ADdpJobOnTheH100NamesTheRankWithSlowReadsAndABalancedOneNone) {
  const nlohmann::json slow = diagnose_ddp_job("slow-r1");
  EXPECT_EQ(slow["world_size"], 2) << slow.dump(1);
  EXPECT_EQ(slow["run_straggler"], 1) << slow.dump(1);
  // The loader's workers are other processes, absent from torch.profiler traces: its cause is input, split unknown.
  EXPECT_EQ(slow["ranks"][1]["verdict_as_straggler"], "input") << slow.dump(1);
  const nlohmann::json balanced = diagnose_ddp_job("balanced");
  EXPECT_EQ(balanced["world_size"], 2);
  EXPECT_EQ(balanced["run_straggler"], -1) << balanced.dump(1);
}

}  // namespace
}  // namespace stalldx::record
