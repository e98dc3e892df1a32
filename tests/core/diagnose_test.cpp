// The diagnosis engine on synthetic traces: every verdict, the seed's worked example, the outputs
// (edge cases: diagnose_edge_cases_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/diagnose/evaluation.h"
#include "stalldx/diagnose/sweep_analysis.h"
#include "diagnose_traces.h"

namespace stalldx::diagnose {
namespace {

using namespace test_traces;

TEST(Verdicts, RetrievalAlone) {
  const Report r = diagnose(input_bound(Role::retrieval, 12, 15, 0.02));
  ASSERT_EQ(r.steps.size(), 12u);
  EXPECT_EQ(count(r, Verdict::retrieval), 12);
  EXPECT_NEAR(r.steps[3].stall_ms, 15.1, 0.05);
  EXPECT_NEAR(r.steps[3].class_ms[0], r.steps[3].stall_ms, 0.2);
  EXPECT_NE(r.steps[3].next_question.find("storage"), std::string::npos);
  EXPECT_EQ(r.summary.dominant, Verdict::retrieval);
}

TEST(Verdicts, DecodingAlone) {
  const Report r = diagnose(input_bound(Role::decode, 12, 15, 0.95));
  EXPECT_EQ(count(r, Verdict::decoding), 12);
  EXPECT_GT(r.summary.stall_ms[1], 12 * 14.0);
}

// CPU-bound decoding asks for more workers only where a core is free for them: with one decoding thread
// busy all the time (it makes the next batch while the device runs) and the loop on a 2-core host the
// cores are full (a cheaper decode is what helps); on 8 cores they are not. Before, every CPU-bound step
// said "more workers" whatever the host.
TEST(Verdicts, CpuBoundDecodingAsksForMoreWorkersOnlyWithFreeCores) {
  const auto busy_decoder = [](Trace& t) {  // each decode from the previous step's wait on, on a CPU 95 % of it
    for (HostRange& r : t.ranges)
      if (r.role == Role::decode) {
        r.begin_ns = std::max<std::int64_t>(0, r.begin_ns - 20'100'000);
        r.cpu_ns = static_cast<std::int64_t>(0.95 * static_cast<double>(r.end_ns - r.begin_ns));
      }
  };
  for (const int cores : {2, 8}) {
    Trace t = input_bound(Role::decode, 12, 15, 0.95);
    busy_decoder(t);
    t.meta.host_facts.cpus = 16;
    t.meta.host_facts.usable_cpus = cores;
    const Report r = diagnose(t);
    ASSERT_EQ(count(r, Verdict::decoding), 12);
    const std::string& next = r.steps[5].next_question;
    EXPECT_EQ(next.find("more workers cannot run") != std::string::npos, cores == 2) << next;
    EXPECT_EQ(next.find("more workers,") != std::string::npos, cores == 8) << next;
  }
  // The loop's own CPU use counts as recorded: a loop on a CPU 10 % of its steps (it mostly waits) leaves
  // most of a core to a second decoder on 2 cores; one on a CPU 90 % of them does not.
  for (const double loop_cpu : {0.1, 0.9}) {
    Trace t = input_bound(Role::decode, 12, 15, 0.95);
    busy_decoder(t);
    t.meta.host_facts.cpus = t.meta.host_facts.usable_cpus = 2;
    for (HostRange& r : t.ranges)
      if (r.role == Role::step) r.cpu_ns = static_cast<std::int64_t>(loop_cpu * static_cast<double>(r.end_ns - r.begin_ns));
    const std::string next = diagnose(t).steps[5].next_question;
    EXPECT_EQ(next.find("more workers,") != std::string::npos, loop_cpu < 0.5) << next;
    if (loop_cpu > 0.5) {
      EXPECT_NE(next.find("its 1 thread + the loop (on a CPU 90 % of its time)"), std::string::npos) << next;
    }
  }
  // A decoder that makes its batch only while the loop waits (idle 57 % of the time, as a loader with no
  // batch in flight) leaves its core to another worker: more workers, on 2 cores too.
  Trace idle = input_bound(Role::decode, 12, 15, 0.95);
  idle.meta.host_facts.cpus = idle.meta.host_facts.usable_cpus = 2;
  const std::string next = diagnose(idle).steps[5].next_question;
  EXPECT_NE(next.find("more workers,"), std::string::npos) << next;
}

// A loop whose batches are made by processes or threads that left no records (multiprocessing
// producers: the hook splits the loop's own wait, during which the loop is blocked) gets no plain "more
// workers": how many makers there are and whether they fill the host is not in the trace (held-out program,
// two mp.Process producers on 2 cores, 2026-12-07: "more workers" before). A loop that decoded on its own
// thread (num_workers=0: on a CPU through its waits) still does. A loop denied a CPU a fifth of the time it
// could run is a host with no core to spare: more workers would make it worse.
TEST(Verdicts, DecodingByMakersWithoutRecordsOrOnAStarvedLoopAsksNoMoreWorkers) {
  const auto loop_split = [](double wait_cpu_fraction, double loop_runq_ms) {
    Builder b;
    double t = 0;
    for (int k = 0; k < 12; ++k) {
      b.range(Role::step, "step", t, t + 30.2, k, k, 0, 12, loop_runq_ms);
      b.range(Role::wait_batch, "wait", t, t + 15, k, k, 0, 15 * wait_cpu_fraction);
      b.range(Role::decode, "decode + transform", t, t + 15, k, k, 0, 15 * wait_cpu_fraction);
      b.range(Role::submit, "submit", t + 15, t + 15.2, k, k);
      b.launch("cudaLaunchKernel", t + 15, t + 15.1, ActivityKind::kernel, "step_kernel", t + 15.1, t + 30.1, k);
      t += 30.2;
    }
    b.t.meta.host_facts.cpus = b.t.meta.host_facts.usable_cpus = 8;
    return diagnose(b.t);
  };
  const Report unseen = loop_split(0.02, 0.1);
  ASSERT_EQ(count(unseen, Verdict::decoding), 12);
  EXPECT_NE(unseen.steps[5].next_question.find("left no records"), std::string::npos) << unseen.steps[5].next_question;
  EXPECT_NE(unseen.steps[5].next_question.find("8 usable cores"), std::string::npos) << unseen.steps[5].next_question;
  const Report own = loop_split(0.98, 0.1);
  ASSERT_EQ(count(own, Verdict::decoding), 12);
  EXPECT_NE(own.steps[5].next_question.find("num_workers > 0"), std::string::npos) << own.steps[5].next_question;  // it decoded on its own thread
  const Report starved = loop_split(0.98, 6);  // runnable 6 ms against 12 on a CPU: denied a third of the time
  ASSERT_EQ(count(starved, Verdict::decoding), 12);
  EXPECT_NE(starved.steps[5].next_question.find("waited for a CPU 33 %"), std::string::npos) << starved.steps[5].next_question;
  bool worse = false;
  for (const Advised& a : starved.summary.advice) worse |= a.kind == Advice::oversubscribed;
  EXPECT_TRUE(worse);
}

// Producers starved of CPU on a host the program's own threads fill (3 DataLoader workers and the loop on
// 2 cores, no other load): the advice names them, not "find what else runs on the host" (held-out loop with
// gradient accumulation and a validation loader, here, 2026-12-07).
TEST(Verdicts, StarvedProducersThatFillTheCoresThemselvesAreNamed) {
  Builder b;
  b.t.threads = {{0, 100, "consumer"}, {1, 101, "worker 1"}, {2, 102, "worker 2"}, {3, 103, "worker 3"}};
  double t = 0;
  for (int k = 0; k < 12; ++k) {
    b.range(Role::step, "step", t, t + 30.2, k, k, 0, 14);
    b.range(Role::wait_batch, "wait", t, t + 15, k, k, 0, 0.1);
    // Each worker makes every third batch over three steps, runnable about half its wall time.
    b.range(Role::decode, "decode + transform", t - 75.6, t + 15, -1, k, 1 + k % 3, 44, 45);
    b.range(Role::submit, "submit", t + 15, t + 15.2, k, k);
    b.launch("cudaLaunchKernel", t + 15, t + 15.1, ActivityKind::kernel, "step_kernel", t + 15.1, t + 30.1, k);
    t += 30.2;
  }
  b.t.meta.host_facts.cpus = b.t.meta.host_facts.usable_cpus = 2;
  const Report r = diagnose(b.t);
  ASSERT_EQ(count(r, Verdict::decoding), 12);
  std::string text;
  for (const Advised& a : r.summary.advice)
    if (a.kind == Advice::oversubscribed) text = a.text;
  EXPECT_NE(text.find("its 3 decoding threads + the loop already fill the 2 usable cores"), std::string::npos) << text;
  EXPECT_EQ(text.find("find what else runs"), std::string::npos) << text;
}

// Producers running flat out (not starved: on a CPU all their wall time) whose threads + the loop fill the
// host's 2 cores: "more workers" cannot run there — the advice says the cores are full, as the step's
// question does; on 8 cores it is more workers (held-out loop with a background prefetch thread, here,
// 2026-12-07, said both at once). Two workers of which one idles most of the time (two loaders zipped,
// one cheap) do not fill 2 cores: more workers (held-out semi-supervised loop, here, 2026-12-07).
TEST(Verdicts, CpuBoundProducersThatFillTheCoresGetNoMoreWorkers) {
  const auto advice = [](int cores, bool one_idles = false) {
    Builder b;
    b.t.threads = {{0, 100, "consumer"}, {1, 101, "worker 1"}, {2, 102, "worker 2"}};
    double t = 0;
    for (int k = 0; k < 12; ++k) {
      b.range(Role::step, "step", t, t + 30.2, k, k, 0, one_idles ? 4 : 14);  // the loop on a CPU 13 % / 46 % of it
      b.range(Role::wait_batch, "wait", t, t + 15, k, k, 0, 0.1);
      // Each worker makes every other batch over two steps, on a CPU all of it; or one makes them all and
      // the other a 2 ms piece of each.
      if (one_idles) {
        b.range(Role::decode, "decode + transform", t - 15, t + 15, -1, k, 1, 29.5, 0.2);
        b.range(Role::decode, "decode (small)", t - 15, t - 13, -1, k, 2, 2, 0);
      } else {
        b.range(Role::decode, "decode + transform", t - 45.2, t + 15, -1, k, 1 + k % 2, 59, 0.2);
      }
      b.range(Role::submit, "submit", t + 15, t + 15.2, k, k);
      b.launch("cudaLaunchKernel", t + 15, t + 15.1, ActivityKind::kernel, "step_kernel", t + 15.1, t + 30.1, k);
      t += 30.2;
    }
    b.t.meta.host_facts.cpus = b.t.meta.host_facts.usable_cpus = cores;
    return diagnose(b.t).summary.advice;
  };
  const auto find = [](const std::vector<Advised>& all, Advice kind) {
    for (const Advised& a : all)
      if (a.kind == kind) return a.text;
    return std::string();
  };
  const auto two = advice(2), eight = advice(8), uneven = advice(2, true);
  EXPECT_EQ(find(two, Advice::more_workers), "");
  EXPECT_NE(find(two, Advice::oversubscribed).find("its 2 decoding threads + the loop (on a CPU"), std::string::npos) << find(two, Advice::oversubscribed);
  EXPECT_NE(find(two, Advice::oversubscribed).find("already fill the 2 usable cores"), std::string::npos) << find(two, Advice::oversubscribed);
  EXPECT_NE(find(eight, Advice::more_workers), "");
  EXPECT_EQ(find(eight, Advice::oversubscribed), "");
  EXPECT_NE(find(uneven, Advice::more_workers), "");
  EXPECT_EQ(find(uneven, Advice::oversubscribed), "");
}

TEST(Verdicts, SubmissionFromPageableCopies) {
  Builder b;
  double t = 0;
  for (int k = 0; k < 12; ++k) {
    b.range(Role::step, "step", t, t + 8.2, k, k);
    b.range(Role::wait_batch, "wait_batch", t, t + 0.05, k, k);
    b.range(Role::submit, "submit", t + 0.05, t + 8.2, k, k);
    b.launch("cudaMemcpyAsync", t + 0.1, t + 8.1, ActivityKind::memcpy_h2d, "h2d", t + 0.2, t + 8.0, k, 13, MemKind::pageable, 77 << 20);
    b.launch("cudaLaunchKernel", t + 8.1, t + 8.15, ActivityKind::kernel, "step_kernel", t + 8.15, t + 28.15, k);
    t += 28.15;
  }
  const Report r = diagnose(b.t);
  EXPECT_EQ(count(r, Verdict::submission), 12);
  bool pageable = false;
  for (const std::string& d : r.steps[4].details) pageable |= d.find("pageable copy") != std::string::npos;
  EXPECT_TRUE(pageable);
  bool recommended = false;
  for (const Advised& a : r.summary.advice) recommended |= a.kind == Advice::pinned_memory;
  EXPECT_TRUE(recommended);
  ASSERT_FALSE(r.bandwidth.empty());
  EXPECT_EQ(r.bandwidth[0].kind, "memcpy_h2d pageable");
}

TEST(Verdicts, DeviceBoundWhenWorkIsQueued) {
  Builder b;
  // The consumer submits step k+1 while the device runs step k, then blocks in sync (in-flight limit).
  for (int k = 0; k < 12; ++k) {
    const double s = k * 30.0;
    b.range(Role::step, "step", s, s + 30, k, k);
    b.range(Role::wait_batch, "wait_batch", s, s + 0.1, k, k);
    b.range(Role::submit, "submit", s + 0.1, s + 0.3, k, k);
    b.launch("cudaLaunchKernel", s + 0.1, s + 0.2, ActivityKind::kernel, "step_kernel", s + 30, s + 60, k);
    b.range(Role::sync, "inflight_wait", s + 0.3, s + 30, k, k);
  }
  const Report r = diagnose(b.t);
  // Step 0's window holds the start-up gap before any device work; every later step is device-bound.
  EXPECT_EQ(count(r, Verdict::device_bound), 11);
  EXPECT_NEAR(r.steps[5].busy_ms, 30, 1e-6);
  EXPECT_EQ(verdict_name(Verdict::device_bound, false), "device-bound");
}

TEST(Verdicts, AlternatingClasses) {
  Builder b;
  double t = 0;
  for (int k = 0; k < 12; ++k) {
    b.range(Role::step, "step", t, t + 10.2, k, k);
    b.range(Role::wait_batch, "wait_batch", t, t + 10, k, k);
    b.range(k % 2 ? Role::decode : Role::retrieval, "work", t, t + 10, -1, k, 1, k % 2 ? 9.5 : 0.1);
    b.launch("cudaLaunchKernel", t + 10, t + 10.1, ActivityKind::kernel, "k", t + 10.1, t + 30.1, k);
    t += 30.1;
  }
  const Report r = diagnose(b.t);
  for (const StepDiagnosis& s : r.steps)
    EXPECT_EQ(s.verdict, s.step % 2 ? Verdict::decoding : Verdict::retrieval) << "step " << s.step;
}

TEST(Verdicts, MixedNamesTheTopTwo) {
  Builder b;
  double t = 0;
  for (int k = 0; k < 3; ++k) {
    b.range(Role::step, "step", t, t + 20.2, k, k);
    b.range(Role::wait_batch, "wait_batch", t, t + 10, k, k);
    b.range(Role::retrieval, "read", t, t + 10, -1, k, 1, 0.1);
    b.range(Role::submit, "submit", t + 10, t + 20.2, k, k);
    b.launch("cudaMemcpyAsync", t + 10, t + 20, ActivityKind::memcpy_h2d, "h2d", t + 20, t + 21, k, 13, MemKind::pinned, 1);
    t += 21;
  }
  const Report r = diagnose(b.t);
  EXPECT_EQ(r.steps[1].verdict, Verdict::mixed);
  const bool pair = (r.steps[1].top == StallClass::retrieval && r.steps[1].second == StallClass::submission) ||
                    (r.steps[1].top == StallClass::submission && r.steps[1].second == StallClass::retrieval);
  EXPECT_TRUE(pair);
}

// The seed's worked example: `data_load` entered at 0.009 ms, left 535.258 ms later; an H2D copy of
// 1.459 ms that ends at 536.216 ms. The range is not the copy's duration; the stall is the ~534.76 ms
// before any device activity; the range holds both retrieval and submission, so: split it.
TEST(SeedExample, DataLoadRangeAndItsCopy) {
  Builder b(0);
  b.range(Role::step, "torch_step", 0, 537.0, 0, 0);
  b.range(Role::user, "data_load", 0.009, 0.009 + 535.258, 0, 0);
  b.launch("cudaMemcpyAsync", 535.20, 535.25, ActivityKind::memcpy_h2d, "Memcpy HtoD (Pinned -> Device)", 536.216 - 1.459, 536.216, 0,
           13, MemKind::pinned, 77070336);
  const Report r = diagnose(b.t);
  ASSERT_EQ(r.steps.size(), 1u);
  const StepDiagnosis& s = r.steps[0];
  EXPECT_NEAR(s.stall_ms, 534.757, 0.001);
  EXPECT_NEAR(s.busy_ms, 1.459, 1e-6);
  EXPECT_NE(s.verdict, Verdict::retrieval);   // no guessing: nothing recorded says retrieval
  EXPECT_NE(s.verdict, Verdict::submission);
  bool copy_line = false;
  for (const std::string& d : s.details)
    copy_line |= d.find("1.459 ms") != std::string::npos && d.find("ends 0.949 ms after 'data_load' closed") != std::string::npos;
  EXPECT_TRUE(copy_line) << report_text(r);
  EXPECT_NE(s.next_question.find("split batch retrieval from transfer submission"), std::string::npos) << s.next_question;
  EXPECT_NE(s.next_question.find("data_load"), std::string::npos);
}

TEST(Outputs, JsonAndSvgCarryEveryStep) {
  const Report r = diagnose(input_bound(Role::retrieval, 5, 5, 0.1));
  const std::string j = report_json(r);
  EXPECT_NE(j.find("\"verdict\": \"retrieval\""), std::string::npos);
  const std::string svg = report_svg(r);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("step 4: retrieval"), std::string::npos);
}

// Any step count reads: the chart keeps its width, bars become means of consecutive steps, the axes
// carry units and the legend every series; the HTML page stays small and carries every step's row.
TEST(Outputs, ChartsReadAtFourThousandSteps) {
  const Report r = diagnose(input_bound(Role::retrieval, 4000, 5, 0.1));
  const std::string svg = report_svg(r);
  EXPECT_NE(svg.find("width=\"960\""), std::string::npos);
  EXPECT_NE(svg.find("per bar (means)"), std::string::npos);
  EXPECT_NE(svg.find("time per step (ms)"), std::string::npos);
  for (const char* legend : {"device busy", "stall: retrieval", "stall: decoding", "stall: submission", "stall: unattributed", "warm-up"})
    EXPECT_NE(svg.find(std::string(">") + legend + "<"), std::string::npos) << legend;
  EXPECT_LT(std::count(svg.begin(), svg.end(), '\n'), 2000);  // bucketed: not one bar per step
  const std::string html = report_html(r, "synthetic");
  EXPECT_LT(html.size(), 5u << 20);
  std::size_t rows = 0;  // the step table's rows travel as JSON; the page shows them 200 at a time
  for (std::size_t p = html.find("{\"b\":"); p != std::string::npos; p = html.find("{\"b\":", p + 1)) ++rows;
  EXPECT_EQ(rows, 4000u);
}

TEST(Outputs, TextFromTracesIsEscapedInSvgAndHtml) {
  Trace t = input_bound(Role::retrieval, 5, 5, 0.1);
  t.meta.device = "<script>alert(1)</script> & \"x\"";
  // A range named like markup, where the consumer spends the stall: it lands in causes and evidence.
  for (HostRange& r : t.ranges)
    if (r.role == Role::wait_batch) {
      r.role = Role::user;
      r.name = t.intern("<script>alert(1)</script>");
    }
  const Report rep = diagnose(t);
  const std::string svg = report_svg(rep);
  EXPECT_EQ(svg.find("<script>"), std::string::npos) << svg.substr(0, 300);
  EXPECT_NE(svg.find("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;x&quot;"), std::string::npos);
  const std::string html = report_html(rep, "<img src=x onerror=alert(1)>.json");
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos) << "the range name is shown, escaped";
  std::size_t scripts = 0;
  for (std::size_t p = html.find("<script"); p != std::string::npos; p = html.find("<script", p + 1)) ++scripts;
  EXPECT_EQ(scripts, 2u) << "only the page's own script and its JSON rows";
  EXPECT_NE(html.find("\\u003cscript\\u003ealert(1)"), std::string::npos) << "the rows' JSON escapes markup";
  SweepPoint p;
  p.workers = 1;
  p.prefetch = 1;
  p.images_per_second = 10;
  p.dominant = Verdict::mixed;  // a verdict, not text: a sweep file's markup never reaches a point (parse_sweep_csv)
  const std::vector<SweepPoint> pts{p};
  const std::string heat = sweep_svg(pts, recommend(pts));
  EXPECT_EQ(heat.find("<script>"), std::string::npos);
  EXPECT_NE(heat.find(">mixed<"), std::string::npos);
  int skipped = 0;
  EXPECT_TRUE(parse_sweep_csv("1,1,10.0,10.0,1.000,1.000,<script>alert(1)</script>,0,0,0,0,\n", skipped).empty());
  EXPECT_EQ(skipped, 1);
  ScenarioScore sc;
  sc.name = "<img src=x onerror=alert(1)>";
  sc.expected = "retrieval";
  sc.steady = 2;
  sc.misses = {"step 3: expected retrieval, got mixed (<script>alert(1)</script>)"};
  sc.expected = "<b>x</b>";
  sc.cells[{Verdict::retrieval, Verdict::mixed}] = 1;
  const std::string eval_page = eval_html({sc});
  EXPECT_EQ(eval_page.find("<img"), std::string::npos);
  EXPECT_EQ(eval_page.find("<script>alert"), std::string::npos);
  EXPECT_EQ(eval_page.find("<b>x"), std::string::npos);
}

}  // namespace
}  // namespace stalldx::diagnose
