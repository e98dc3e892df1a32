// The cross-rank analysis on hand-made rank summaries (no MPI): stragglers, balance, and bad input; and
// on real ranks' traces from the H200, trimmed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "stalldx/diagnose/ranks.h"
#include "stalldx/launched_within.h"
#include "stalldx/trace_io.h"

namespace stalldx::diagnose {
namespace {

// Rank `rank` of 3 arriving at each step's all-reduce `late_ms` after a common start, 100 ms steps.
RankSteps rank(int r, double late_ms, Verdict v = Verdict::device_bound, int steps = 12, std::string run = "abc") {
  RankSteps s;
  s.rank = r;
  s.world_size = 3;
  s.run_id = std::move(run);
  s.file = "out.rank" + std::to_string(r) + ".json";
  for (int i = 0; i < steps; ++i) {
    RankSteps::Step st;
    st.step = i;
    st.warmup = i < 2;
    st.arrive_ns = static_cast<std::int64_t>((i * 100.0 + late_ms) * 1e6);
    st.window_ms = 100;
    st.verdict = v;
    st.evidence = "evidence of rank " + std::to_string(r);
    s.steps.push_back(st);
  }
  return s;
}

TEST(CrossRank, TheLastToArriveIsTheStragglerWithItsOwnVerdict) {
  CrossRankReport rep;
  ASSERT_TRUE(cross_rank({rank(0, 0.2), rank(2, 40, Verdict::retrieval), rank(1, 0.5)}, {}, rep).is_ok());
  ASSERT_EQ(rep.steps.size(), 10u) << "steady steps only";
  for (const CrossStep& c : rep.steps) {
    EXPECT_EQ(c.straggler, 2);
    EXPECT_EQ(c.straggler_verdict, Verdict::retrieval);
    EXPECT_NEAR(c.waited_ms, 39.8, 1e-6);
    EXPECT_EQ(c.waiting, (std::vector<int>{0, 1})) << "earliest first";
  }
  EXPECT_EQ(rep.run_straggler, 2);
  const std::string text = cross_rank_text(rep, false);
  EXPECT_NE(text.find("ranks 0,1 waited up to 39.80 ms in the all-reduce for rank 2: retrieval — evidence of rank 2"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 2 is the straggler: the others waited 398.0 ms for it, 40 % of the steady time, on 10 of 10 steady steps (retrieval) — fix"), std::string::npos) << text;
}

TEST(CrossRank, TheChartShowsEachStepsWaitForWhomWithALegend) {
  CrossRankReport rep;
  ASSERT_TRUE(cross_rank({rank(0, 0.2), rank(2, 40, Verdict::retrieval), rank(1, 0.5)}, {}, rep).is_ok());
  const std::string svg = cross_rank_svg(rep, false);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("step 5: waited 39.80 ms for rank 2 (retrieval)"), std::string::npos) << svg;
  EXPECT_NE(svg.find("straggler: rank 2"), std::string::npos);
  EXPECT_NE(svg.find(">balanced</text>"), std::string::npos) << "the legend";
}

TEST(CrossRank, SmallLeadsAreBalanced) {
  CrossRankReport rep;
  // 3 ms apart on 100 ms steps: under 10 % of the window.
  ASSERT_TRUE(cross_rank({rank(0, 0), rank(1, 3), rank(2, 1.5)}, {}, rep).is_ok());
  EXPECT_EQ(rep.balanced_steps, 10);
  EXPECT_EQ(rep.run_straggler, -1);
  EXPECT_NE(cross_rank_text(rep, false).find("no consistent straggler"), std::string::npos);
}

// A rank whose batches come in bursts (four workers each bringing a whole batch): it holds the job up on
// every fourth step, for long, and the steps between are balanced. Named by the time it cost.
TEST(CrossRank, ARankThatHoldsUpFewStepsForLongIsTheStragglerByTime) {
  std::vector<RankSteps> ranks = {rank(0, 0.2), rank(1, 0.5), rank(2, 0.4, Verdict::retrieval)};
  for (RankSteps& r : ranks)
    for (RankSteps::Step& st : r.steps)
      if (st.step % 4 == 0) {
        st.window_ms = 1000;
        if (r.rank == 2) st.arrive_ns += 900'000'000;
      }
  CrossRankReport rep;
  ASSERT_TRUE(cross_rank(ranks, {}, rep).is_ok());
  EXPECT_EQ(rep.balanced_steps, 8) << "steps 4 and 8 of the steady 2..11 held up";
  EXPECT_NEAR(rep.steady_ms, 8 * 100 + 2 * 1000, 1e-6);
  EXPECT_EQ(rep.run_straggler, 2) << "2 of 10 steps, but 64 % of the steady time";
  const std::string text = cross_rank_text(rep, false);
  EXPECT_NE(text.find("rank 2 is the straggler: the others waited 1800.4 ms for it, 64 % of the steady time, on 2 of 10 steady steps "
                      "(retrieval): few but long waits"), std::string::npos) << text;
  // Two ranks taking turns, each as costly: neither is the job's straggler.
  for (RankSteps::Step& st : ranks[1].steps)
    if (st.step == 8) st.arrive_ns += 900'000'000;
  for (RankSteps::Step& st : ranks[2].steps)
    if (st.step == 8) st.arrive_ns -= 900'000'000;
  ASSERT_TRUE(cross_rank(ranks, {}, rep).is_ok());
  EXPECT_EQ(rep.run_straggler, -1);
  EXPECT_NE(cross_rank_text(rep, false).find("no consistent straggler"), std::string::npos);
}

TEST(CrossRank, TracesOfDifferentRunsOrTheSameRankTwiceAreRefusedByName) {
  CrossRankReport rep;
  Status st = cross_rank({rank(0, 0), rank(1, 0, Verdict::device_bound, 12, "other")}, {}, rep);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("out.rank0.json"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("out.rank1.json"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("different runs"), std::string::npos) << st.message();
  st = cross_rank({rank(1, 0), rank(1, 5)}, {}, rep);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("is rank 1 again"), std::string::npos) << st.message();
}

TEST(CrossRank, AMissingRankIsReportedAndTheRestDiagnosed) {
  CrossRankReport rep;
  ASSERT_TRUE(cross_rank({rank(0, 0), rank(2, 30, Verdict::decoding)}, {}, rep).is_ok());
  EXPECT_EQ(rep.missing, std::vector<int>{1});
  ASSERT_FALSE(rep.notes.empty());
  EXPECT_NE(rep.notes.front().find("no trace for rank 1 of 3"), std::string::npos) << rep.notes.front();
  EXPECT_EQ(rep.run_straggler, 2);
}

TEST(CrossRank, ARankThatDiedIsTheStragglerOfEveryStepAfterItsLast) {
  RankSteps dead = rank(1, 0, Verdict::device_bound, 6);
  dead.interrupted = true;
  CrossRankReport rep;
  ASSERT_TRUE(cross_rank({rank(0, 0), dead, rank(2, 0.5)}, {}, rep).is_ok());
  int never = 0;
  for (const CrossStep& c : rep.steps)
    if (c.step > 5) {
      EXPECT_EQ(c.straggler, 1) << c.step;
      EXPECT_TRUE(c.never_arrived);
      ++never;
    }
  EXPECT_EQ(never, 6);
  EXPECT_NE(cross_rank_text(rep, false).find("rank 1 never arrived"), std::string::npos);
}

// A rank's trace where each step's collective range only enqueues NCCL's kernel, which begins on the
// device `device_late_ms` into the step (it waits there for the step's compute); with `linked` the
// kernel's launching call is recorded inside the range, else the kernel has no call.
Trace nccl_rank_trace(double device_late_ms, bool linked) {
  Trace t;
  t.meta.config = {{"rank", "0"}, {"world_size", "2"}, {"run_id", "r1"}};
  t.threads.push_back({0, 1, "consumer"});
  t.threads.push_back({1, 2, "worker"});
  const auto ms = [](double v) { return static_cast<std::int64_t>(v * 1e6); };
  const std::uint32_t kernel = t.intern("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"), launch = t.intern("cuLaunchKernelEx");
  for (int i = 0; i < 6; ++i) {
    const double b = i * 100.0;
    t.ranges.push_back({ms(b), ms(b + 100), 0, t.intern("step"), Role::step, i, i});
    t.ranges.push_back({ms(b + 10), ms(b + 11), 0, t.intern("all_reduce"), Role::collective, i, i});
    const std::uint64_t corr = 1000 + static_cast<std::uint64_t>(i);
    if (linked) t.calls.push_back({ms(b + 10.5), ms(b + 10.6), 0, launch, corr, i});
    t.calls.push_back({ms(b + 10.5), ms(b + 10.6), 1, launch, corr + 100, -1});  // another thread's call at the same time
    DeviceActivity a;
    a.begin_ns = ms(b + device_late_ms);
    a.end_ns = ms(b + 95);
    a.name = kernel;
    a.correlation = corr;
    a.step = i;
    a.bytes = 51'200'000;
    t.activities.push_back(a);
    DeviceActivity other = a;
    other.correlation = corr + 100;
    other.begin_ns = ms(b + 1);
    t.activities.push_back(other);
  }
  return t;
}

TEST(CrossRank, WithNcclARankArrivesWhenItsKernelBeginsOnTheDevice) {
  RankSteps r;
  ASSERT_TRUE(rank_steps(nccl_rank_trace(60, true), "nccl.rank0.json", {}, r).is_ok());
  EXPECT_EQ(r.arrival, RankSteps::Arrival::device_collective);
  ASSERT_EQ(r.steps.size(), 6u);
  for (const RankSteps::Step& s : r.steps) EXPECT_EQ(s.arrive_ns, static_cast<std::int64_t>((s.step * 100.0 + 60) * 1e6)) << s.step;
  // Without the launching call the kernel cannot be told from other device work: the host range counts.
  ASSERT_TRUE(rank_steps(nccl_rank_trace(60, false), "nccl.rank0.json", {}, r).is_ok());
  EXPECT_EQ(r.arrival, RankSteps::Arrival::host_collective);
  for (const RankSteps::Step& s : r.steps) EXPECT_EQ(s.arrive_ns, static_cast<std::int64_t>((s.step * 100.0 + 10) * 1e6)) << s.step;
}

TEST(CrossRank, NcclKernelsLaunchedByNoMarkedCallStillGiveTheArrival) {
  // DDP's reducer: NCCL's kernels with no collective range around their launch (demangled names).
  Trace t = nccl_rank_trace(60, true);
  std::erase_if(t.ranges, [](const HostRange& r) { return r.role == Role::collective; });
  const std::uint32_t gemm = t.intern("sm90_xmma_gemm_f32f32(Params)");
  for (std::size_t i = 0; i < t.activities.size(); ++i)
    if (i % 2 == 1) t.activities[i].name = gemm;  // the other thread's work is not a collective
    else t.activities[i].name = t.intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  RankSteps r;
  ASSERT_TRUE(rank_steps(t, "ddp.rank0.json", {}, r).is_ok());
  EXPECT_EQ(r.arrival, RankSteps::Arrival::device_collective);
  for (const RankSteps::Step& s : r.steps) EXPECT_EQ(s.arrive_ns, static_cast<std::int64_t>((s.step * 100.0 + 60) * 1e6)) << s.step;
}

// A rank of a synchronous data-parallel job whose all-reduce left no record (DDP over gloo): 100 ms
// steps, each opened by a wait for its batch of `wait_ms`, the loader's reads behind it.
Trace unmarked_rank_trace(int rank, double wait_ms) {
  Trace t;
  t.meta.config = {{"rank", std::to_string(rank)}, {"world_size", "2"}, {"run_id", "ddp"}};
  t.threads.push_back({0, 1, "MainThread"});
  t.threads.push_back({1, 2, "pt_data_worker"});
  const auto ms = [](double v) { return static_cast<std::int64_t>(v * 1e6); };
  for (int i = 0; i < 12; ++i) {
    const double b = i * 100.0;
    t.ranges.push_back({ms(b), ms(b + 100), 0, t.intern("step"), Role::step, i, i});
    if (wait_ms > 0) {
      t.ranges.push_back({ms(b), ms(b + wait_ms), 0, t.intern("DataLoader.__next__"), Role::wait_batch, i, i});
      t.ranges.push_back({ms(b - 20), ms(b + wait_ms - 1), 1, t.intern("open"), Role::retrieval, i, i});
    }
  }
  return t;
}

TEST(CrossRank, WithNoCollectiveRecordedTheLastBatchReadyIsTheStraggler) {
  RankSteps r0, r1;
  ASSERT_TRUE(rank_steps(unmarked_rank_trace(0, 0), "ddp.rank0.json", {}, r0).is_ok());
  ASSERT_TRUE(rank_steps(unmarked_rank_trace(1, 40), "ddp.rank1.json", {}, r1).is_ok());
  EXPECT_EQ(r0.arrival, RankSteps::Arrival::batch_ready);
  ASSERT_EQ(r1.steps.size(), 12u);
  EXPECT_EQ(r1.steps[4].arrive_ns, static_cast<std::int64_t>(440 * 1e6));
  CrossRankReport rep;
  ASSERT_TRUE(cross_rank({r0, r1}, {}, rep).is_ok());
  EXPECT_EQ(rep.run_straggler, 1);
  int named = 0;
  for (const CrossStep& c : rep.steps) named += c.straggler == 1 && std::abs(c.waited_ms - 40) < 0.01;
  EXPECT_EQ(named, static_cast<int>(rep.steps.size()));
  bool said = false;
  for (const std::string& n : rep.notes) said = said || n.find("their batch was ready") != std::string::npos;
  EXPECT_TRUE(said);
  // Balanced: both ranks wait as long; nobody is named.
  ASSERT_TRUE(rank_steps(unmarked_rank_trace(0, 40), "ddp.rank0.json", {}, r0).is_ok());
  ASSERT_TRUE(cross_rank({r0, r1}, {}, rep).is_ok());
  EXPECT_EQ(rep.run_straggler, -1);
  EXPECT_EQ(rep.balanced_steps, static_cast<int>(rep.steps.size()));
}

TEST(CrossRank, TheReportSaysWhatTheAllReduceCostOnTheHostAndOnTheDevice) {
  const Report rep = diagnose(nccl_rank_trace(60, true));
  const CollectiveSummary& c = rep.collective;
  EXPECT_EQ(c.ranges, 6u);
  EXPECT_NEAR(c.host_mean_ms, 1.0, 1e-6);
  EXPECT_EQ(c.device_records, 6u) << "not the other thread's work";
  EXPECT_NEAR(c.device_mean_ms, 35.0, 1e-6);
  EXPECT_NEAR(c.device_bytes_per_range, 51.2e6, 1);
  const std::string text = report_text(rep, true);
  EXPECT_NE(text.find("all-reduce 6 times: host 1.000 ms mean"), std::string::npos) << text;
  EXPECT_NE(text.find("on the device 6 records, 51.2 MB a time, 35.000 ms mean"), std::string::npos) << text;
  EXPECT_EQ(diagnose(Trace{}).collective.ranges, 0u);
}

TEST(LaunchedWithin, OnlyWorkLaunchedFromInsideTheRoleOnItsOwnThread) {
  const Trace t = nccl_rank_trace(60, true);
  const std::vector<std::size_t> got = activities_launched_within(t, Role::collective);
  ASSERT_EQ(got.size(), 6u);
  for (std::size_t i : got) EXPECT_LT(t.activities[i].correlation, 1100u) << "not the other thread's";
  EXPECT_TRUE(activities_launched_within(t, Role::decode).empty());
}

TEST(CrossRank, ARankKilledMidRunIsTheOneTheOthersWereStoppedWaitingFor) {
  // Rank 1 was killed in step 7: it left no trace; ranks 0 and 2 arrived at step 7's all-reduce and were
  // stopped there (their traces end at step 7, marked).
  RankSteps r0 = rank(0, 0, Verdict::device_bound, 8), r2 = rank(2, 0.5, Verdict::device_bound, 8);
  for (RankSteps* r : {&r0, &r2}) {
    r->interrupted = true;
    r->stuck_step = 7;
  }
  CrossRankReport rep;
  ASSERT_TRUE(cross_rank({r0, r2}, {}, rep).is_ok());
  EXPECT_EQ(rep.missing, std::vector<int>{1});
  ASSERT_FALSE(rep.steps.empty());
  const CrossStep& last = rep.steps.back();
  EXPECT_EQ(last.step, 7);
  EXPECT_EQ(last.straggler, 1);
  EXPECT_TRUE(last.never_arrived);
  EXPECT_EQ(last.waiting, (std::vector<int>{0, 2}));
  for (const CrossStep& c : rep.steps) {
    if (c.step < 7) {
      EXPECT_EQ(c.straggler, -1) << c.step;
    }
  }
  const std::string text = cross_rank_text(rep, false);
  EXPECT_NE(text.find("rank 1, which left no trace, never arrived"), std::string::npos) << text;
  EXPECT_NE(text.find("step 7: rank 1 never arrived at the all-reduce"), std::string::npos) << text;
}

TEST(CrossRank, ThePageHasTheAnswerTheChartTheRanksAndEscapedEvidence) {
  RankSteps r2 = rank(2, 40, Verdict::retrieval);
  for (auto& st : r2.steps) st.evidence = "reads of <b>big</b> & slow files";
  CrossRankReport rep;
  ASSERT_TRUE(cross_rank({rank(0, 0.2), r2}, {}, rep).is_ok());  // rank 1 missing
  const std::string html = cross_rank_html(rep, {"rank 0 (vm, out.rank0.json): 12 steady steps\n", "rank 2 <x>\n"}, false);
  EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u) << html.substr(0, 80);
  EXPECT_NE(html.find("<b>rank 2 is the straggler</b>: the others waited 398.0 ms for it, 40 % of the steady time, on 10 of 10 steady steps (retrieval)"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("<td>1</td><td colspan=\"4\" class=\"l muted\">no trace</td>"), std::string::npos) << "the missing rank's row";
  EXPECT_NE(html.find("reads of &lt;b&gt;big&lt;/b&gt; &amp; slow files"), std::string::npos);
  EXPECT_EQ(html.find("<b>big</b>"), std::string::npos) << "evidence is escaped";
  EXPECT_NE(html.find("rank 2 &lt;x&gt;"), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

// Own steps: from leaving step s-1's all-reduce to arriving at step s's. Rank 0 leaves every all-reduce
// 10 ms after the others (the collective's own skew) and so arrives 10 ms late with an equal step: not a
// straggler. Rank 2's own step is 40 ms longer: it is.
TEST(CrossRank, ArrivingLateOnlyBecauseOfLeavingLateIsNotStraggling) {
  auto with_own = [](RankSteps r, double own_ms) {
    for (auto& st : r.steps) st.own_ns = static_cast<std::int64_t>(own_ms * 1e6);
    return r;
  };
  CrossRankReport rep;
  ASSERT_TRUE(cross_rank({with_own(rank(0, 10), 60), with_own(rank(1, 0), 60), with_own(rank(2, 0.5), 60)}, {}, rep).is_ok());
  EXPECT_EQ(rep.run_straggler, -1);
  EXPECT_EQ(rep.balanced_steps, 10);
  EXPECT_NE(cross_rank_text(rep, false).find("left the previous all-reduce as far apart"), std::string::npos) << cross_rank_text(rep, false);
  ASSERT_TRUE(cross_rank({with_own(rank(0, 0), 60), with_own(rank(1, 0.2), 60), with_own(rank(2, 40, Verdict::retrieval), 100)}, {}, rep).is_ok());
  EXPECT_EQ(rep.run_straggler, 2);
}

TEST(CrossRank, ARanksTraceNeedsItsRankFacts) {
  Trace t;
  RankSteps r;
  const Status st = rank_steps(t, "plain.json", {}, r);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("plain.json"), std::string::npos);
  EXPECT_NE(st.message().find("not a rank's trace"), std::string::npos);
}

}  // namespace
}  // namespace stalldx::diagnose

namespace stalldx::diagnose {
namespace {
// Real ranks: 4 MPI ranks on the H200 host (Open MPI 4.1.6, --device none, 4 workers each, 60 ms steps,
// 8 MB host all-reduce; 2026-12-03 14:04 UTC), each trace cut to 4 steady steps (`stalldx diagnose
// --trimmed`) and gzipped: tests/data/ranks-h200/.
CrossRankReport h200_ranks(const std::string& name) {
  CrossRankAccumulator acc;
  for (int r = 0; r < 4; ++r) {
    const std::string file = fmt::format("{}/ranks-h200/r-{}.rank{}.json.gz", STALLDX_TEST_DATA, name, r);
    Trace t;
    EXPECT_TRUE(read_trace_file(file, t).is_ok()) << file;
    RankSteps steps;
    EXPECT_TRUE(rank_steps(t, file, {}, steps).is_ok()) << file;
    EXPECT_TRUE(acc.add(steps).is_ok()) << file;
  }
  return acc.finish();
}
TEST(CrossRank, RealRanksFromTheH200) {
  const CrossRankReport balanced = h200_ranks("balanced");
  EXPECT_EQ(balanced.world_size, 4);
  EXPECT_TRUE(balanced.missing.empty());
  ASSERT_EQ(balanced.steps.size(), 4u);
  EXPECT_EQ(balanced.balanced_steps, 4);
  EXPECT_EQ(balanced.run_straggler, -1);
  const CrossRankReport slow = h200_ranks("slow-reads-r2");  // --rank-override 2:read-latency-ms=20
  ASSERT_EQ(slow.steps.size(), 4u);
  EXPECT_EQ(slow.run_straggler, 2);
  for (const CrossStep& c : slow.steps) {
    EXPECT_EQ(c.straggler, 2) << "step " << c.step;
    EXPECT_EQ(c.straggler_verdict, Verdict::retrieval) << c.straggler_evidence;
    EXPECT_EQ(c.waiting.size(), 3u);
  }
}
}  // namespace
}  // namespace stalldx::diagnose
