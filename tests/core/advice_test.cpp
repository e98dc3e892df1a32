// Advice rules: each one follows from typed causes, the recorded config and the host's facts, and is
// never given when the config already has what it would propose, nor "more workers" on a starved host.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/trace_io.h"
#include "advice_support.h"

namespace stalldx::diagnose {
namespace {

using namespace advice_tests;

// Each step waits 15 ms on batch k produced by a `role` range with cpu/wall `cpu` (and run-queue delay /
// wall `runq`, -1 = not sampled), then a 20 ms kernel.
Trace input_loop(Role role, double cpu, const std::map<std::string, std::string>& config, int cpus = 16, double runq = -1) {
  Loop l(config, cpus);
  double t = 0;
  for (int k = 0; k < 12; ++k) {
    l.range(role, role == Role::decode ? "decode" : "read", t, t + 15, -1, k, 1, 15 * cpu, runq < 0 ? -1 : 15 * runq);
    t = l.waiting_step(k, t, 15, 20);
  }
  return l.t;
}

// Each step submits through one kind of slow call (`api`, lasting 10 ms) before a 20 ms kernel.
Trace submission_loop(const char* api, ActivityKind kind, MemKind mem, int copies, const std::map<std::string, std::string>& config) {
  Loop l(config);
  double t = 0;
  for (int k = 0; k < 12; ++k) {
    l.range(Role::step, "step", t, t + 10.2, k, k);
    l.range(Role::submit, "submit", t, t + 10.2, k, k);
    const double each = 10.0 / copies;
    for (int c = 0; c < copies; ++c)
      l.call(api, t + c * each, t + (c + 1) * each, k, kind, "op", t + c * each + 0.01, t + c * each + 0.01 + 0.1 * each, mem);
    l.call("cudaLaunchKernel", t + 10.1, t + 10.2, k, ActivityKind::kernel, "k", t + 10.2, t + 30.2);
    t += 30.2;
  }
  return l.t;
}

TEST(Advice, MoreWorkersOnlyWhenDecodeRanAndCoresAreFree) {
  const Report spare = diagnose(input_loop(Role::decode, 0.95, {{"workers", "4"}}, 16));
  EXPECT_TRUE(has(spare, Advice::more_workers)) << all(spare);
  EXPECT_FALSE(has(spare, Advice::oversubscribed));
  // Starved decode threads (cpu/wall 0.45, as on a 2-core machine with 4 workers): never "more workers".
  const Report starved = diagnose(input_loop(Role::decode, 0.45, {{"workers", "4"}}, 16));
  EXPECT_FALSE(has(starved, Advice::more_workers)) << all(starved);
  EXPECT_TRUE(has(starved, Advice::oversubscribed)) << all(starved);
  EXPECT_EQ(starved.steps[3].causes.front().cause, Cause::decode_starved);
  // Workers + consumer already fill the cores.
  const Report full = diagnose(input_loop(Role::decode, 0.95, {{"workers", "4"}}, 4));
  EXPECT_FALSE(has(full, Advice::more_workers)) << all(full);
  EXPECT_TRUE(has(full, Advice::oversubscribed));
}

// With no device records (a CPU-only loop, CUPTI off) the loop's waits are still measured: the input
// advice stands beside "collect device records"; nothing is said of submission. Before, "collect device
// records" was the only line (held-out CPU loops: a streaming dataset waiting on storage, inline
// augmentation).
TEST(Advice, WithoutDeviceRecordsTheInputAdviceStillStands) {
  const auto host_only = [](Trace t) {
    t.calls.clear();
    t.activities.clear();
    t.meta.cupti = false;
    return t;
  };
  const Report reads = diagnose(host_only(input_loop(Role::retrieval, 0.02, {}, 16)));
  ASSERT_FALSE(reads.coverage.device_records);
  EXPECT_TRUE(has(reads, Advice::collect_device_records)) << all(reads);
  EXPECT_TRUE(has(reads, Advice::storage_latency)) << all(reads);
  const Report decodes = diagnose(host_only(input_loop(Role::decode, 0.45, {{"workers", "4"}}, 16)));
  EXPECT_TRUE(has(decodes, Advice::oversubscribed)) << all(decodes);
  EXPECT_FALSE(has(decodes, Advice::more_workers)) << all(decodes);
  for (const Advised& a : decodes.summary.advice) EXPECT_NE(a.text.rfind("submission", 0), 0u) << a.text;
}

// Reads that ran little of their wall time: waiting on storage when they were blocked, the host's CPU
// denied when they were runnable (run-queue delay) — then the verdict is the CPU and "more concurrent
// reads" is never advised.
TEST(Advice, QueuedReadsAreCpuStarvationNotStorage) {
  const Report blocked = diagnose(input_loop(Role::retrieval, 0.05, {{"workers", "4"}}, 16, 0.02));
  EXPECT_EQ(blocked.steps[3].verdict, Verdict::retrieval);
  EXPECT_EQ(blocked.steps[3].causes.front().cause, Cause::storage_wait);
  const Report queued = diagnose(input_loop(Role::retrieval, 0.05, {{"workers", "4"}}, 16, 0.9));
  EXPECT_EQ(queued.steps[3].verdict, Verdict::decoding) << queued.steps[3].evidence;
  EXPECT_EQ(queued.steps[3].causes.front().cause, Cause::read_starved);
  EXPECT_NE(queued.steps[3].evidence.find("queued 0.90"), std::string::npos) << queued.steps[3].evidence;
  EXPECT_FALSE(has(queued, Advice::storage_latency)) << all(queued);
  EXPECT_FALSE(has(queued, Advice::more_workers)) << all(queued);
  EXPECT_TRUE(has(queued, Advice::oversubscribed)) << all(queued);
  // Decode with a low cpu/wall but no run-queue delay was blocked, not denied a CPU.
  const Report decode_blocked = diagnose(input_loop(Role::decode, 0.45, {{"workers", "4"}}, 16, 0.0));
  EXPECT_EQ(decode_blocked.steps[3].causes.front().cause, Cause::decode_cpu_bound);
  const Report decode_queued = diagnose(input_loop(Role::decode, 0.45, {{"workers", "4"}}, 16, 0.5));
  EXPECT_TRUE(has(decode_queued, Advice::oversubscribed)) << all(decode_queued);
  EXPECT_FALSE(has(decode_queued, Advice::more_workers)) << all(decode_queued);
}

TEST(Advice, DecodeOptionsOnlyWhenNotAlreadySet) {
  const Report off = diagnose(input_loop(Role::decode, 0.95, {{"workers", "4"}, {"output", "float32"}, {"dct_scaling", "false"}, {"roi_decode", "false"}}));
  EXPECT_TRUE(has(off, Advice::uint8_output));
  EXPECT_TRUE(has(off, Advice::enable_dct_scaling));
  EXPECT_TRUE(has(off, Advice::enable_roi_decode));
  const Report on = diagnose(input_loop(Role::decode, 0.95, {{"workers", "4"}, {"output", "uint8"}, {"dct_scaling", "true"}, {"roi_decode", "true"}}));
  EXPECT_FALSE(has(on, Advice::uint8_output)) << all(on);
  EXPECT_FALSE(has(on, Advice::enable_dct_scaling));
  EXPECT_FALSE(has(on, Advice::enable_roi_decode));
}

TEST(Advice, BandwidthCapIsNotAnsweredWithMoreReads) {
  const Report cap = diagnose(input_loop(Role::retrieval, 0.05, {{"workers", "4"}, {"read_bandwidth_mbps", "40"}}));
  EXPECT_TRUE(has(cap, Advice::bandwidth_cap)) << all(cap);
  EXPECT_FALSE(has(cap, Advice::storage_latency));
  const Report latency = diagnose(input_loop(Role::retrieval, 0.05, {{"workers", "4"}, {"read_bandwidth_mbps", "0"}}));
  EXPECT_TRUE(has(latency, Advice::storage_latency)) << all(latency);
  EXPECT_EQ(latency.steps[3].causes.front().cause, Cause::storage_wait);
}

TEST(Advice, SubmissionRulesRespectTheConfig) {
  struct Case {
    const char* api;
    ActivityKind kind;
    MemKind mem;
    int copies;
    Advice advice;
    std::map<std::string, std::string> has_it, lacks_it;
  };
  const std::vector<Case> cases = {
      {"cudaMemcpyAsync", ActivityKind::memcpy_h2d, MemKind::pageable, 1, Advice::pinned_memory,
       {{"memory", "pinned"}, {"pin_per_batch", "false"}}, {{"memory", "pageable"}}},
      {"cudaMemcpyAsync", ActivityKind::memcpy_h2d, MemKind::pinned, 16, Advice::batch_copies, {{"copy", "batch"}}, {{"copy", "sample"}}},
      {"cudaStreamSynchronize", ActivityKind::sync, MemKind::none, 1, Advice::drop_step_sync, {{"sync_every_step", "false"}},
       {{"sync_every_step", "true"}}},
      {"cudaHostRegister", ActivityKind::sync, MemKind::none, 1, Advice::pin_once, {{"pin_per_batch", "false"}, {"memory", "pinned"}},
       {{"pin_per_batch", "true"}}},
  };
  for (const Case& c : cases) {
    const Report lacks = diagnose(submission_loop(c.api, c.kind, c.mem, c.copies, c.lacks_it));
    EXPECT_TRUE(has(lacks, c.advice)) << c.api << "\n" << all(lacks);
    const Report set = diagnose(submission_loop(c.api, c.kind, c.mem, c.copies, c.has_it));
    EXPECT_FALSE(has(set, c.advice)) << c.api << " proposed what the config already has\n" << all(set);
  }
}

// 500 launches a step at 30 µs of host time each, kernels of 10 µs: the device idles while the host
// launches. The cause is the launch rate — not "synchronization".
TEST(Advice, LaunchRateIsItsOwnCause) {
  Loop l({{"workers", "16"}, {"step_kernels", "500"}, {"sync_every_step", "false"}});
  double t = 0;
  for (int k = 0; k < 12; ++k) {
    const double s0 = t;
    l.range(Role::step, "step", s0, s0 + 15.2, k, k);
    l.range(Role::submit, "submit", s0, s0 + 15.2, k, k);
    for (int i = 0; i < 500; ++i) {
      const double b = s0 + i * 0.03;
      l.call("cudaLaunchKernel", b, b + 0.025, k, ActivityKind::kernel, "tiny", b + 0.025, b + 0.035);
    }
    t = s0 + 15.2;
  }
  const Report r = diagnose(l.t);
  EXPECT_EQ(r.steps[5].verdict, Verdict::submission);
  ASSERT_FALSE(r.steps[5].causes.empty());
  EXPECT_EQ(r.steps[5].causes.front().cause, Cause::launch_rate);
  EXPECT_EQ(r.steps[5].launch.launches, 500);
  EXPECT_NEAR(r.steps[5].launch.host_us_per_launch, 25, 1);
  EXPECT_NEAR(r.steps[5].launch.device_us_per_kernel, 10, 1);
  EXPECT_TRUE(has(r, Advice::launch_rate)) << all(r);
  EXPECT_FALSE(has(r, Advice::drop_step_sync)) << all(r);
  EXPECT_NE(r.steps[5].next_question.find("CUDA Graph"), std::string::npos);
}

}  // namespace
}  // namespace stalldx::diagnose

namespace stalldx::diagnose {
namespace {
// The batch is ready, but the consumer's step range holds 10 ms of idle outside its children while the
// range's own run-queue delay is `runq` ms: that idle is the submitting thread waiting for a CPU.
Trace ready_batch_late_submit(double runq) {
  Loop l({{"workers", "4"}}, 16);
  double t = 0;
  for (int k = 0; k < 12; ++k) {
    // step [t, t+10.3]: wait 0.1 ms (batch ready, its own run-queue delay 0.05 ms), 10 ms of nothing, the launch.
    l.range(Role::step, "step", t, t + 10.3, k, k, 0, -1, runq + 0.05);
    l.range(Role::wait_batch, "wait_batch", t, t + 0.1, k, k, 0, 0.05, 0.05);
    l.range(Role::decode, "decode", t - 5, t - 1, -1, k, 1, 4, 0);
    l.call("cudaLaunchKernel", t + 10.1, t + 10.2, k, ActivityKind::kernel, "k", t + 10.2, t + 30.2);
    t += 30.2;
  }
  return l.t;
}
TEST(Advice, ConsumerWaitingForACpuIsSubmissionStarved) {
  const Report starved = diagnose(ready_batch_late_submit(10));
  EXPECT_EQ(starved.steps[3].verdict, Verdict::submission) << starved.steps[3].evidence;
  EXPECT_EQ(starved.steps[3].causes.front().cause, Cause::consumer_starved) << starved.steps[3].evidence;
  EXPECT_TRUE(has(starved, Advice::consumer_starved)) << all(starved);
  EXPECT_FALSE(has(starved, Advice::more_workers)) << all(starved);
  // The same idle with no run-queue delay: the consumer ran code of its own, in no range, and launched
  // the next kernel after the device went idle — host-paced (HTA's rule), submission, said as such.
  const Report ran = diagnose(ready_batch_late_submit(0));
  EXPECT_EQ(ran.steps[3].verdict, Verdict::submission) << ran.steps[3].evidence;
  EXPECT_EQ(ran.steps[3].causes.front().cause, Cause::host_paced) << ran.steps[3].evidence;
  EXPECT_TRUE(has(ran, Advice::host_paced)) << all(ran);
  EXPECT_FALSE(has(ran, Advice::consumer_starved)) << all(ran);
  // Half the idle queued: half starved, half host-paced.
  const Report half = diagnose(ready_batch_late_submit(5));
  double starved_ms = 0, paced_ms = 0;
  for (const CauseShare& c : half.steps[3].causes) {
    if (c.cause == Cause::consumer_starved) starved_ms += c.ms;
    if (c.cause == Cause::host_paced) paced_ms += c.ms;
  }
  EXPECT_NEAR(starved_ms, 5, 0.2);
  EXPECT_NEAR(paced_ms, 5, 0.3);
}
}  // namespace
}  // namespace stalldx::diagnose

namespace stalldx::diagnose {
namespace {
// A loader whose 4 workers each build a whole batch and finish together: every 4th step waits 200 ms
// (its batch's reads blocked on storage), the 3 after it find theirs ready; each step runs a 20 ms kernel.
// `long_waits` of the 24 steps wait (every 4th first). With `spikes` the batches not waited for took
// 19 ms to read (a few slow batches) instead of 800 ms like the others (all slow, made in parallel).
Trace bursty_loop(int long_waits, bool spikes = false) {
  Loop l({{"workers", "4"}}, 16);
  double t = 0;
  for (int k = 0; k < 24; ++k) {
    const bool waits = k % 4 == 0 && k / 4 < long_waits;
    const double wait = waits ? 200 : 0.05;
    if (waits) l.range(Role::retrieval, "read", t - 600, t + wait, -1, k, 1, 40);
    else l.range(Role::retrieval, "read", spikes ? t - 20 : t - 800, t - 1, -1, k, 1, spikes ? 1 : 40);
    t = l.waiting_step(k, t, wait, 20);
  }
  return l.t;
}
TEST(Advice, BurstsOfBatchesAreInputBoundThoughMostStepsAreNot) {
  const Report r = diagnose(bursty_loop(6));
  EXPECT_EQ(r.steps[4].verdict, Verdict::retrieval) << r.steps[4].evidence;
  EXPECT_EQ(r.steps[5].verdict, Verdict::device_bound) << r.steps[5].evidence;
  EXPECT_EQ(r.summary.dominant, Verdict::device_bound);
  // Counted by steps device-bound; weighed by time input-bound, as the headline (the first line) says.
  EXPECT_EQ(r.summary.headline.bound, Bound::input) << r.summary.headline.text;
  EXPECT_GT(r.summary.headline.retrieval, 0.5) << r.summary.headline.text;
  EXPECT_EQ(report_text(r).rfind("input-bound: the loop waited on input", 0), 0u) << report_text(r).substr(0, 300);
  EXPECT_EQ(report_json(r).find("\"headline\""), report_json(r).find('"')) << "the headline is the JSON's first key";
  ASSERT_TRUE(has(r, Advice::bursty_input)) << all(r);
  EXPECT_NE(all(r).find("6 of 24 steady steps waited"), std::string::npos) << all(r);
  // Never "the input pipeline keeps up" for a run that waited on input most of its time.
  EXPECT_FALSE(has(r, Advice::input_keeps_up)) << all(r);
  EXPECT_TRUE(has(r, Advice::storage_latency)) << all(r);
  // One long wait is a spike, not bursts; and a loop where every step waits is plainly input-bound.
  const Report spike = diagnose(bursty_loop(1));
  EXPECT_FALSE(has(spike, Advice::bursty_input)) << all(spike);
  const Report steady = diagnose(input_loop(Role::retrieval, 0.05, {{"workers", "4"}}, 16));
  EXPECT_FALSE(has(steady, Advice::bursty_input)) << all(steady);
  EXPECT_EQ(steady.summary.headline.bound, Bound::input) << steady.summary.headline.text;
  EXPECT_FALSE(has(steady, Advice::input_spikes)) << all(steady);
}
// The same waits when only the batches waited for were slow to make: spikes, not bursts.
TEST(Advice, SlowBatchesAmongFastOnesAreSpikesNotBursts) {
  const Report r = diagnose(bursty_loop(6, true));
  EXPECT_FALSE(has(r, Advice::bursty_input)) << all(r);
  ASSERT_TRUE(has(r, Advice::input_spikes)) << all(r);
  EXPECT_NE(all(r).find("took 800 ms to make against 19 ms"), std::string::npos) << all(r);
  EXPECT_FALSE(has(r, Advice::input_keeps_up)) << all(r);
  const Report bursts = diagnose(bursty_loop(6));
  EXPECT_FALSE(has(bursts, Advice::input_spikes)) << all(bursts);
  EXPECT_NE(all(bursts).find("made in parallel, delivered together"), std::string::npos) << all(bursts);
}
}  // namespace
}  // namespace stalldx::diagnose

namespace stalldx::diagnose {
namespace {
// The JSON report names each piece of advice by kind, one name per kind.
TEST(Vocabulary, EveryAdviceKindHasItsOwnName) {
  std::set<std::string> names;
  for (int k = 0; k < kAdviceCount; ++k) {
    const std::string n = advice_name(static_cast<Advice>(k));
    EXPECT_NE(n, "?") << k;
    EXPECT_TRUE(names.insert(n).second) << n;
  }
  const Report r = diagnose(bursty_loop(6));
  const std::string j = report_json(r);
  EXPECT_NE(j.find("\"kind\": \"bursty_input\""), std::string::npos) << j.substr(0, 2000);
}
}  // namespace
}  // namespace stalldx::diagnose

namespace stalldx::diagnose {
namespace {
// A device-bound loop (30 ms kernels, batches ready) of `steps` steps whose first `slow` steps waited
// `wait_ms` on their first batches' decoding (start-up), and optionally a slow step every 6th step later
// on (a pattern) or one step halfway that waited `hiccup_ms` (noise).
Trace startup_loop(int slow, bool periodic = false, double wait_ms = 400, int steps = 24, double hiccup_ms = 0) {
  Loop l({{"workers", "8"}}, 16);
  double t = 0;
  for (int k = 0; k < steps; ++k) {
    const double wait = k < slow || (periodic && k % 6 == 0) ? wait_ms : k == steps / 2 && hiccup_ms > 0 ? hiccup_ms : 0.05;
    l.range(Role::decode, "decode", wait > 1 ? t : t - 20, wait > 1 ? t + wait : t - 1, -1, k, 1, wait > 1 ? 0.9 * wait : 18);
    t = l.waiting_step(k, t, wait, 30);
  }
  return l.t;
}
TEST(Advice, StartUpCountedAsSteadyStateIsNamedWithTheWarmUpThatSetsItAside) {
  const Report r = diagnose(startup_loop(2));
  EXPECT_EQ(r.summary.dominant, Verdict::device_bound);
  ASSERT_TRUE(has(r, Advice::startup_in_steady_state)) << all(r);
  EXPECT_NE(all(r).find("the first 2 steady steps took 860 ms together"), std::string::npos) << all(r);
  EXPECT_NE(all(r).find("--warmup 2"), std::string::npos) << all(r);
  // The totals keep its 800 ms of decoding; the advice is about the steps after it, whose input kept
  // up: no "more workers" for the first batches, no bursts made of two start-up waits.
  EXPECT_GT(r.summary.stall_ms[static_cast<std::size_t>(StallClass::decoding)], 790);
  EXPECT_FALSE(has(r, Advice::more_workers)) << all(r);
  EXPECT_FALSE(has(r, Advice::bursty_input)) << all(r);
  ASSERT_TRUE(has(r, Advice::input_keeps_up)) << all(r);
  EXPECT_NE(all(r).find("after start-up"), std::string::npos) << all(r);
  // Set aside, the same run keeps up and start-up is not mentioned.
  Thresholds th;
  th.warmup_steps = 2;
  const Report set_aside = diagnose(startup_loop(2), th);
  EXPECT_FALSE(has(set_aside, Advice::startup_in_steady_state)) << all(set_aside);
  EXPECT_TRUE(has(set_aside, Advice::input_keeps_up)) << all(set_aside);
  EXPECT_EQ(all(set_aside).find("after start-up"), std::string::npos) << all(set_aside);
  // The suggested warm-up counts the steps already set aside.
  th.warmup_steps = 1;
  EXPECT_NE(all(diagnose(startup_loop(2), th)).find("--warmup 2"), std::string::npos) << all(diagnose(startup_loop(2), th));
}
// The seed workload recorded without a warm-up (H200, 2026-12-04): the first step waited 54 ms for its
// batch, then 14 device-bound steps — and "decoding: more workers" was advised for 16 workers on 16
// vCPUs. A first step under 3x the median, or a small share of a long run, is start-up all the same.
TEST(Advice, OneSlowFirstStepIsStartUpNotAReasonForMoreWorkers) {
  for (int steps : {15, 60}) {
    const Report r = diagnose(startup_loop(1, false, 54, steps));
    ASSERT_TRUE(has(r, Advice::startup_in_steady_state)) << steps << all(r);
    EXPECT_NE(all(r).find("--warmup 1"), std::string::npos) << all(r);
    EXPECT_FALSE(has(r, Advice::more_workers)) << steps << all(r);
    EXPECT_FALSE(has(r, Advice::oversubscribed)) << steps << all(r);
    EXPECT_TRUE(has(r, Advice::input_keeps_up)) << steps << all(r);
  }
  // cuDNN autotuning in the first step of a loop whose steps vary (one later step 1.8x the median): start-up.
  EXPECT_TRUE(has(diagnose(startup_loop(1, false, 4000, 24, 25)), Advice::startup_in_steady_state));
  // A first step barely slower than the rest (1.2x) is not start-up.
  const Report mild = diagnose(startup_loop(1, false, 6, 15));
  EXPECT_FALSE(has(mild, Advice::startup_in_steady_state)) << all(mild);
}
TEST(Advice, ASlowStepThatRecursIsNotStartUp) {
  const Report periodic = diagnose(startup_loop(1, true));
  EXPECT_FALSE(has(periodic, Advice::startup_in_steady_state)) << all(periodic);
  const Report none = diagnose(startup_loop(0));
  EXPECT_FALSE(has(none, Advice::startup_in_steady_state)) << all(none);
  EXPECT_TRUE(has(none, Advice::input_keeps_up)) << all(none);
  const Report bursts = diagnose(bursty_loop(6));
  EXPECT_FALSE(has(bursts, Advice::startup_in_steady_state)) << all(bursts);
  // The H200's spike-every-4 scenario: its first steady step is its worst spike (8x the median), a later
  // one is slow too — spikes, not start-up, and the retrieval advice stands.
  Trace spikes;
  ASSERT_TRUE(read_trace_file(std::string(STALLDX_TEST_DATA) + "/h200/spike-every-4.json", spikes).is_ok());
  const Report r = diagnose(spikes);
  EXPECT_FALSE(has(r, Advice::startup_in_steady_state)) << all(r);
  EXPECT_TRUE(has(r, Advice::storage_latency)) << all(r);
}
}  // namespace
}  // namespace stalldx::diagnose
