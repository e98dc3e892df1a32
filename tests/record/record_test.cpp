// stalldx record: merging parts, step assignment by correlation, and — where the injection library was
// built — a real program (nvtx_loop: a main thread + forked workers, plain NVTX) recorded end to end.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <set>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/record/merge.h"
#include "stalldx/record/part_format.h"
#include "stalldx/record/role_map.h"
#include "stalldx/trace_io.h"
#include "recorded.h"
#include "spawned.h"
#include "test_support.h"

namespace stalldx::record {
namespace {

// The parts folder is the recorded program's to write: a FIFO or a link planted there is refused and
// counted, never read (a FIFO would block the merge for ever).
TEST(Merge, NonRegularPartsAreRefusedNotRead) {
  const std::string dir = stalldx::testing::temp_dir("parts");
  ASSERT_EQ(::mkfifo((dir + "/123.proc").c_str(), 0600), 0);
  ASSERT_EQ(::symlink("/etc/passwd", (dir + "/124.names").c_str()), 0);
  Trace t;
  MergeReport rep;
  ASSERT_TRUE(merge_parts(dir, RoleMap::defaults(), MergeOptions{}, t, rep).is_ok());
  EXPECT_EQ(rep.unreadable_parts, 2u);
  ASSERT_EQ(rep.problems.size(), 2u);
  EXPECT_NE(rep.problems[0].find("not a regular file"), std::string::npos) << rep.problems[0];
}

// A kernel launched in step 1 that runs into step 2's time belongs to step 1 (its call's step).
TEST(Merge, DeviceWorkBelongsToTheStepOfItsCallNotTheStepItOverlaps) {
  Trace t;
  t.threads = {{0, 10, "main"}, {1, 11, "worker"}};
  const auto step = t.intern("ProfilerStep#5");
  const auto step2 = t.intern("ProfilerStep#6");
  t.ranges.push_back({1000, 2000, 0, step, Role::step});
  t.ranges.push_back({2000, 3000, 0, step2, Role::step});
  t.ranges.push_back({1100, 1200, 0, t.intern("wait"), Role::wait_batch});
  t.ranges.push_back({1500, 1600, 1, t.intern("ProfilerStep#99"), Role::step});  // off the consumer: demoted
  t.calls.push_back({1900, 1950, 0, t.intern("cudaLaunchKernel"), 7});
  const auto kernel = [&t](std::uint64_t correlation, std::int64_t begin, std::int64_t end) {
    DeviceActivity k;
    k.begin_ns = begin;
    k.end_ns = end;
    k.kind = ActivityKind::kernel;
    k.correlation = correlation;
    t.activities.push_back(k);
  };
  kernel(7, 1960, 2500);
  EXPECT_EQ(assign_steps(t), 1u);
  EXPECT_EQ(t.ranges[0].step, 5);
  EXPECT_EQ(t.ranges[1].step, 6);
  EXPECT_EQ(t.ranges[2].step, 5);
  EXPECT_EQ(t.ranges[2].batch, 5);
  EXPECT_EQ(t.ranges[3].role, Role::user);
  EXPECT_EQ(t.calls[0].step, 5);
  EXPECT_EQ(t.activities[0].step, 5);
  EXPECT_EQ(t.meta.unmatched_device, 0u);
  // Device work launched before the first step (start-up) is outside the steps, not unmatched; work
  // inside the span with no call is.
  kernel(100, 10, 20);
  kernel(101, 2100, 2200);
  assign_steps(t);
  EXPECT_EQ(t.meta.unmatched_device, 1u);
}

#ifdef NVTX_LOOP

TEST(Record, MainThreadAndForkedWorkersMergeIntoOneTraceWithRolesAndProcesses) {
  const Recorded r = record("--steps 10 --workers 3 --read-ms 15 --decode-ms 1 --step-ms 1 --name-thread");
  ASSERT_EQ(r.rc, 0) << r.log;
  Trace t;
  ASSERT_TRUE(read_trace_file(r.trace_path, t).is_ok()) << r.log;
  std::set<std::int64_t> pids;
  for (const ThreadInfo& th : t.threads) pids.insert(th.pid);
  EXPECT_EQ(pids.size(), 4u) << r.log;  // the loop + 3 forked workers
  std::map<Role, int> roles;
  for (const HostRange& h : t.ranges) roles[h.role]++;
  EXPECT_EQ(roles[Role::step], 10);
  EXPECT_EQ(roles[Role::wait_batch], 10);
  EXPECT_EQ(roles[Role::retrieval], 30);
  EXPECT_EQ(roles[Role::decode], 30);
  bool named = false;
  for (const ThreadInfo& th : t.threads) named = named || th.name == "trainer";
  EXPECT_TRUE(named) << "nvtxNameOsThread names the lane";
  EXPECT_NE(r.log.find("4 processes seen"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("no device records"), std::string::npos) << r.log;
  // The host's CPUs the command could use are the trace's (advice weighs threads against them): before,
  // a recorded program's trace had none (-1), and "more workers" was said on a host with no core free.
  EXPECT_EQ(t.meta.host_facts.cpus, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_GT(t.meta.host_facts.usable_cpus, 0);
  EXPECT_LE(t.meta.host_facts.usable_cpus, t.meta.host_facts.cpus);
  // The workers' reads (sleeping: off-CPU, not queued) are what the main thread waited for, split by the
  // worker ranges that overlap each wait (they name no batch).
  EXPECT_TRUE(t.meta.cpu_time);
  diagnose::Thresholds th;
  th.warmup_steps = 2;
  const diagnose::Report rep = diagnose::diagnose(t, th);
  int waiting = 0, steady = 0;
  for (const diagnose::StepDiagnosis& s : rep.steps) {
    if (s.warmup) continue;
    ++steady;
    EXPECT_EQ(s.verdict, diagnose::Verdict::no_device_records);
    if (!s.causes.empty() && s.causes.front().cause == diagnose::Cause::storage_wait) ++waiting;
  }
  EXPECT_EQ(steady, 8);
  EXPECT_GE(waiting, 7) << r.log;
}

// An integer NVTX payload on a worker's range names the batch it works on: waits are then split by
// their own batch's producers, as in a native trace, not by whatever overlaps them.
TEST(Record, IntegerPayloadsNameTheBatch) {
  const Recorded r = record("--steps 10 --workers 3 --read-ms 15 --decode-ms 1 --step-ms 1 --payload");
  ASSERT_EQ(r.rc, 0) << r.log;
  Trace t;
  ASSERT_TRUE(read_trace_file(r.trace_path, t).is_ok()) << r.log;
  std::map<std::int64_t, int> by_batch;
  for (const HostRange& h : t.ranges)
    if (h.role == Role::retrieval || h.role == Role::decode) by_batch[h.batch]++;
  ASSERT_EQ(by_batch.size(), 10u) << "batch -1 would mean a payload was lost";
  for (const auto& [batch, n] : by_batch) {
    EXPECT_GE(batch, 0);
    EXPECT_EQ(n, 6) << "batch " << batch << ": 3 workers x (read + decode)";
  }
  diagnose::Thresholds th;
  th.warmup_steps = 2;
  const diagnose::Report rep = diagnose::diagnose(t, th);
  int waiting = 0;
  for (const diagnose::StepDiagnosis& s : rep.steps)
    if (!s.warmup && !s.causes.empty() && s.causes.front().cause == diagnose::Cause::storage_wait) ++waiting;
  EXPECT_GE(waiting, 7) << r.log;
}

// A long run under --sample keeps each thread's newest ranges (a ring); the trace begins where the
// rings' kept periods all begin. Without --sample a full part keeps its first ranges and drops the rest.
// The parts are made small (4,096 ranges) for the test; the real bound is kPartRangeCapacity.
TEST(Record, ALongSampledRunKeepsTheNewestRangesAndAFullRunTheFirst) {
  ::setenv(kPartCapacityEnv, "4096", 1);
  const std::string loop = "--steps 6000 --workers 2 --read-ms 0 --decode-ms 0.1 --step-ms 0 --payload";
  const Recorded ring = record(loop, "--sample 5/100");
  const Recorded cap = record(loop);
  ::unsetenv(kPartCapacityEnv);
  const auto batches = [](const Recorded& r, std::int64_t& lo, std::int64_t& hi, std::size_t& steps) {
    Trace t;
    ASSERT_TRUE(read_trace_file(r.trace_path, t).is_ok()) << r.log;
    lo = INT64_MAX, hi = -1, steps = 0;
    for (const HostRange& h : t.ranges) {
      if (h.role == Role::step) ++steps;
      if (h.role != Role::retrieval && h.role != Role::decode) continue;
      lo = std::min(lo, h.batch);
      hi = std::max(hi, h.batch);
    }
  };
  ASSERT_EQ(ring.rc, 0) << ring.log;
  ASSERT_EQ(cap.rc, 0) << cap.log;
  std::int64_t lo = 0, hi = 0;
  std::size_t steps = 0;
  batches(ring, lo, hi, steps);
  EXPECT_EQ(hi, 5999) << "the newest batches kept\n" << ring.log;
  EXPECT_GT(lo, 3000) << "the oldest overwritten\n" << ring.log;
  EXPECT_GT(steps, 1000u);
  EXPECT_LE(steps, 2048u) << "4,096 ranges of the loop's thread: two a step";
  EXPECT_NE(ring.log.find("oldest ranges overwritten (4096 a thread are kept)"), std::string::npos) << ring.log;
  EXPECT_EQ(ring.log.find("ranges dropped"), std::string::npos) << ring.log;
  {
    // Its steps are numbered as the run counted them (the live step marks tell where the trace begins),
    // so a wait finds the batch its producers worked on, and no warm-up or start-up is set aside mid-run.
    Trace t;
    ASSERT_TRUE(read_trace_file(ring.trace_path, t).is_ok());
    std::int64_t first = INT64_MAX, last = -1;
    std::set<std::int64_t> produced;
    for (const HostRange& h : t.ranges) {
      if (h.role == Role::step) first = std::min(first, h.step), last = std::max(last, h.step);
      if (h.role == Role::decode) produced.insert(h.batch);
    }
    EXPECT_EQ(last, 5999) << "the run's last step";
    EXPECT_EQ(t.meta.config.at(kStepsBeforeTraceKey), std::to_string(first));
    ASSERT_FALSE(produced.empty());
    std::size_t waits = 0, linked = 0;
    for (const HostRange& h : t.ranges)  // the waits whose batches' work is in the trace (the workers run ahead)
      if (h.role == Role::wait_batch && h.step >= *produced.begin()) waits++, linked += produced.count(h.batch);
    EXPECT_GT(waits, 500u);
    EXPECT_EQ(linked, waits) << "every wait's batch was decoded by the workers";
    const diagnose::Report rep = diagnose::diagnose(t);
    EXPECT_TRUE(rep.coverage.begins_mid_run);
    EXPECT_EQ(rep.coverage.first_step, first);
    EXPECT_EQ(nlohmann::json::parse(diagnose::report_json(rep))["coverage"]["begins_mid_run"]["first_step"], first);
    for (const diagnose::StepDiagnosis& s : rep.steps) EXPECT_FALSE(s.warmup) << s.step;
  }
  batches(cap, lo, hi, steps);
  EXPECT_EQ(lo, 0) << cap.log;
  EXPECT_LT(hi, 3000) << cap.log;
  EXPECT_NE(cap.log.find("ranges dropped"), std::string::npos) << cap.log;
}

TEST(Record, ExitCodeIsTheCommandsAndACrashStillLeavesItsRecords) {
  EXPECT_EQ(record("--steps 2 --workers 1 --read-ms 1 --exit 3").rc, 3);
  const Recorded crashed = record("--steps 3 --workers 1 --read-ms 1 --abort");
  EXPECT_EQ(crashed.rc, 128 + SIGABRT) << crashed.log;
  EXPECT_NE(crashed.log.find("killed by signal"), std::string::npos) << crashed.log;
  Trace t;
  ASSERT_TRUE(read_trace_file(crashed.trace_path, t).is_ok()) << crashed.log;
  EXPECT_TRUE(t.meta.interrupted);
  int steps = 0;
  for (const HostRange& h : t.ranges) steps += h.role == Role::step;
  EXPECT_EQ(steps, 3);
}

// A program annotated as people do — "iter N", "next_batch", "read", "decode" — needs no roles file.
TEST(Record, NamesAsPeopleWriteThemNeedNoFlags) {
  const Recorded r = record("--steps 10 --workers 2 --read-ms 15 --decode-ms 1 --step-ms 1 --people-names", "--json --warmup 2");
  ASSERT_EQ(r.rc, 0) << r.log;
  EXPECT_NE(r.log.find("steps: 10 ranges named as steps"), std::string::npos) << r.log;
  Trace t;
  ASSERT_TRUE(read_trace_file(r.trace_path, t).is_ok()) << r.log;
  std::map<Role, int> roles;
  for (const HostRange& h : t.ranges) roles[h.role]++;
  EXPECT_EQ(roles[Role::step], 10);
  EXPECT_EQ(roles[Role::wait_batch], 10);
  EXPECT_EQ(roles[Role::retrieval], 20);
  EXPECT_EQ(roles[Role::decode], 20);
  diagnose::Thresholds th;
  th.warmup_steps = 2;
  const diagnose::Report rep = diagnose::diagnose(t, th);
  int waiting = 0;
  for (const diagnose::StepDiagnosis& s : rep.steps)
    if (!s.warmup && !s.causes.empty() && s.causes.front().cause == diagnose::Cause::storage_wait) ++waiting;
  EXPECT_GE(waiting, 7) << r.log;
  EXPECT_EQ(rep.summary.headline.bound, diagnose::Bound::input) << rep.summary.headline.text;
}

// Two numbered families of unknown words on one thread: the longer is the steps, and the report says why.
TEST(Record, OfTwoNumberedFamiliesTheLongerIsTheStepsAndTheReportSaysWhich) {
  const Recorded r = record("--steps 8 --workers 1 --read-ms 5 --decode-ms 1 --step-ms 2 --two-families");
  ASSERT_EQ(r.rc, 0) << r.log;
  EXPECT_NE(r.log.find("steps: 'pass #'"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("passed over: 'part #'"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("--step REGEX"), std::string::npos) << r.log;
  Trace t;
  ASSERT_TRUE(read_trace_file(r.trace_path, t).is_ok()) << r.log;
  EXPECT_EQ(t.meta.config.at("steps_rule"), "numbered_family");
  int steps = 0;
  for (const HostRange& h : t.ranges) steps += h.role == Role::step;
  EXPECT_EQ(steps, 8);
  // --step overrides (search semantics: found anywhere in the name).
  const Recorded o = record("--steps 8 --workers 1 --read-ms 5 --decode-ms 1 --step-ms 2 --two-families", "--step '^part'");
  ASSERT_EQ(o.rc, 0) << o.log;
  EXPECT_NE(o.log.find("steps: 8 ranges named as steps ('part"), std::string::npos) << o.log;
}

// Names are bytes: one that is not UTF-8 and carries an ESC sequence is written as valid UTF-8 (counted),
// the trace reads back, --json parses, and no control character reaches the terminal.
TEST(Record, NamesThatAreNotUtf8NorPrintableNeitherBreakTheTraceNorTheTerminal) {
  const Recorded r = record("--steps 4 --workers 1 --read-ms 1 --odd-names", "--json");
  ASSERT_EQ(r.rc, 0) << r.log;
  EXPECT_NE(r.log.find("were not UTF-8"), std::string::npos) << r.log;
  EXPECT_EQ(r.log.find('\x1b'), std::string::npos) << "an ESC reached the terminal";
  Trace t;
  ASSERT_TRUE(read_trace_file(r.trace_path, t).is_ok()) << r.log;
  bool replaced = false;
  for (const std::string& n : t.names) replaced = replaced || n.find("\xEF\xBF\xBD") != std::string::npos;
  EXPECT_TRUE(replaced);
  const std::size_t json_at = r.log.find("{\n");
  ASSERT_NE(json_at, std::string::npos) << r.log;
  EXPECT_FALSE(nlohmann::json::parse(r.log.substr(json_at), nullptr, false).is_discarded()) << r.log.substr(json_at, 500);
}

TEST(Record, UnbalancedPopsAndUnclosedRangesAreCountedNotFatal) {
  const Recorded r = record("--steps 2 --workers 1 --read-ms 1 --unbalanced --unclosed --domain");
  ASSERT_EQ(r.rc, 0) << r.log;
  EXPECT_NE(r.log.find("2 NVTX pops without a push"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("1 ranges never closed"), std::string::npos) << r.log;
  Trace t;
  ASSERT_TRUE(read_trace_file(r.trace_path, t).is_ok());
  int steps = 0;
  for (const HostRange& h : t.ranges) steps += h.role == Role::step;
  EXPECT_EQ(steps, 2) << "domain ranges with registered strings keep their names";
}

// What the recorded program is told: the NVTX injection always; the CUDA injection and which optional
// CUPTI records it enables, as the options chose.
TEST(Record, CudaOptionsReachTheProgramsEnvironment) {
  const std::string dir = stalldx::testing::temp_dir("record-env");
  const auto env_seen = [&](const std::string& opts) {
    const std::string out = dir + "/env.txt";
    const std::string cmd = fmt::format(
        "{} record --trace {}/t.json {} -- sh -c 'echo \"nvtx=${{NVTX_INJECTION64_PATH:+set}} cuda=${{CUDA_INJECTION64_PATH:+set}} "
        "kinds=${{STALLDX_RECORD_CUDA:-unset}}\" > {}' > {}/log.txt 2>&1",
        STALLDX_BINARY, dir, opts, out, dir);
    EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 0) << stalldx::testing::read_file(dir + "/log.txt");
    return stalldx::testing::read_file(out);
  };
  EXPECT_EQ(env_seen(""), "nvtx=set cuda=set kinds=driver,sync\n");
  EXPECT_EQ(env_seen("--no-cuda-driver"), "nvtx=set cuda=set kinds=sync\n");
  EXPECT_EQ(env_seen("--no-cuda-driver --no-cuda-sync"), "nvtx=set cuda=set kinds=none\n");
  EXPECT_EQ(env_seen("--cuda-every-call"), "nvtx=set cuda=set kinds=driver,sync,every-call\n");
  EXPECT_EQ(env_seen("--no-cuda"), "nvtx=set cuda= kinds=unset\n");
  // The trace and the summary say what was left out.
  Trace t;
  ASSERT_TRUE(read_trace_file(dir + "/t.json", t).is_ok());
  EXPECT_EQ(t.meta.config.at("cuda_records"), "none (--no-cuda)");
  EXPECT_NE(stalldx::testing::read_file(dir + "/log.txt").find("CUDA records: none (--no-cuda)"), std::string::npos);
}

TEST(Record, SixtyFourProcesses) {
  const Recorded r = record("--steps 2 --workers 63 --read-ms 1 --decode-ms 0.1");
  ASSERT_EQ(r.rc, 0) << r.log;
  EXPECT_NE(r.log.find("64 processes seen"), std::string::npos) << r.log;
}

TEST(Record, CommandNotFoundIs127AndABadRolesFileStopsBeforeTheCommandStarts) {
  const std::string dir = stalldx::testing::temp_dir("record-bad");
  int status = std::system(fmt::format("{} record --trace {}/t.json -- /nonexistent/program > {}/log.txt 2>&1", STALLDX_BINARY, dir, dir).c_str());
  EXPECT_EQ(WEXITSTATUS(status), 127);
  EXPECT_NE(stalldx::testing::read_file(dir + "/log.txt").find("/nonexistent/program"), std::string::npos);
  stalldx::testing::write_file(dir + "/roles.toml", "[[role]]\nmatch = \"x\"\nrole = \"nope\"\n");
  status = std::system(fmt::format("{} record --roles {}/roles.toml --trace {}/t2.json -- touch {}/started > {}/log2.txt 2>&1", STALLDX_BINARY, dir,
                                   dir, dir, dir).c_str());
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(stalldx::testing::read_file(dir + "/log2.txt").find("roles.toml:1"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir + "/started")) << "the command must not start";
}
// A program that makes no NVTX range and no CUDA call is invisible to record: the summary says so, instead
// of only asking for step names.
TEST(Record, AProgramWithNoRangesNorCudaIsSaidToBeInvisible) {
  const std::string dir = stalldx::testing::temp_dir("record-none");
  const int status = std::system(fmt::format("{} record --trace {}/t.json -- true > {}/log.txt 2>&1", STALLDX_BINARY, dir, dir).c_str());
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const std::string log = stalldx::testing::read_file(dir + "/log.txt");
  EXPECT_NE(log.find("0 processes seen"), std::string::npos) << log;
  EXPECT_NE(log.find("no process of the command made an NVTX range or a CUDA call"), std::string::npos) << log;
}
// The injection reads back what record wrote, for every combination.
TEST(Record, CudaRecordsEnvRoundTrips) {
  using stalldx::record::OptionalCudaRecords;
  for (int bits = 0; bits < 8; ++bits) {
    const OptionalCudaRecords r{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0};
    EXPECT_EQ(stalldx::record::cuda_records_from_env(stalldx::record::cuda_records_env(r).c_str()), r) << bits;
  }
  EXPECT_EQ(stalldx::record::cuda_records_from_env(nullptr), OptionalCudaRecords{}) << "unset: driver and sync, no state queries";
}

// Ctrl-C on stalldx reaches the recorded program once (its own process group), what it recorded is
// merged and written, marked interrupted, and stalldx exits as the program did (130).
TEST(Record, InterruptIsForwardedAndTheRecordingIsKept) {
  const std::string dir = stalldx::testing::temp_dir("record-int");
  stalldx::testing::Spawned p({STALLDX_BINARY, "record", "--trace", dir + "/t.json", "--", NVTX_LOOP, "--steps", "100000", "--workers", "2",
                               "--read-ms", "2", "--announce"});
  ASSERT_TRUE(p.wait_for_line("step 2 done")) << p.stderr_text();
  p.signal(SIGINT);
  double after = 0;
  EXPECT_EQ(p.wait_exit(after), 130) << p.stderr_text();
  Trace t;
  ASSERT_TRUE(read_trace_file(dir + "/t.json", t).is_ok()) << p.stderr_text();
  EXPECT_TRUE(t.meta.interrupted);
  int steps = 0;
  for (const HostRange& h : t.ranges) steps += h.role == Role::step;
  EXPECT_GE(steps, 3);
}
#else
TEST(Record, EndToEnd) { GTEST_SKIP() << "built without the NVTX headers: no injection library"; }
#endif

}  // namespace
}  // namespace stalldx::record
