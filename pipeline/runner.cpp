#include "stalldx/pipeline/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "stalldx/stage/batch_pool.h"
#include "stalldx/stage/checksum.h"
#include "dataset_index.h"
#include "producer.h"
#include "stalldx/launched_within.h"
#include "stalldx/rank_facts.h"
#include "stalldx/profiler.h"
#include "stalldx/stats.h"

namespace stalldx::pipeline {

Status validate(const RunConfig& c) {
  // Each value was range-checked when it was parsed (the field table); here: what the table cannot
  // check alone, and configs built in code.
  static const RunConfig defaults{};
  for (const RunField& f : run_fields()) {
    RunConfig probe = defaults;
    if (Status st = f.assign(probe, f.value(c)); !st.is_ok()) return st;
  }
  if (c.read_bandwidth_mbps > 0 && c.read_bandwidth_mbps < 0.1)
    return Status::invalid(fmt::format("--read-bandwidth-mbps {} is absurd: 0 (no cap) or >= 0.1 MB/s", c.read_bandwidth_mbps));
  if (c.nvtx_only && !c.profile) return Status::invalid("--nvtx-only with --no-profile: no ranges would be emitted; drop one of them");
  if (c.nvtx_only && !c.trace.empty())
    return Status::invalid(fmt::format("--nvtx-only with --trace '{}': nothing is recorded in-process; record with `stalldx record -- stalldx run --nvtx-only`", c.trace));
  const int slots = slot_count(c, kMaxExtraSlots);
  if (batch_bytes(c) * static_cast<std::size_t>(slots) > (64ull << 30))
    return Status::invalid(fmt::format("{} batch slots of {:.1f} MB would exceed 64 GB", slots, batch_bytes(c) / 1e6));
  return Status::ok();
}

namespace {
// --competing-threads: busy threads beside the pipeline, as another job on a shared host would be.
class CompetingLoad {
 public:
  explicit CompetingLoad(int n) {
    for (int i = 0; i < n; ++i)
      threads_.emplace_back([this] {
        volatile std::uint64_t x = 0;
        while (!stop_.load(std::memory_order_relaxed))
          for (int k = 0; k < 100000; ++k) x = x + static_cast<std::uint64_t>(k);
      });
  }
  ~CompetingLoad() { stop(); }
  void stop() {
    stop_.store(true);
    for (std::thread& t : threads_)
      if (t.joinable()) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

void fill_stats(RunResult& r) {
  r.step_p50 = percentile(r.step_ms, 50);
  r.step_p95 = percentile(r.step_ms, 95);
  r.step_max = r.step_ms.empty() ? 0 : *std::max_element(r.step_ms.begin(), r.step_ms.end());
  r.wait_p50 = percentile(r.wait_ms, 50);
  r.wait_p95 = percentile(r.wait_ms, 95);
  r.wait_max = r.wait_ms.empty() ? 0 : *std::max_element(r.wait_ms.begin(), r.wait_ms.end());
  double sum = 0;
  for (double w : r.wait_ms) sum += w;
  r.wait_mean = r.wait_ms.empty() ? 0 : sum / static_cast<double>(r.wait_ms.size());
}

// What a run holds from open to close. Members are destroyed in reverse: the session before the pool,
// the pool (its memory from the stage's allocator) before the stage.
struct OpenRun {
  RunConfig c;
  DatasetIndex index;
  std::unique_ptr<DeviceStage> stage;
  std::unique_ptr<BatchPool> pool;
  Session session;
};

// Open: the config checked, the dataset indexed, the device stage chosen (CUDA when a device is present,
// else the host stand-in with a notice), the batch slots allocated, the recording session started.
Status open_run(const RunConfig& config_in, const std::atomic<bool>* stop, bool with_collective, OpenRun& run, RunResult& r) {
  RunConfig& c = run.c;
  c = config_in;
  if (Status st = validate(c); !st.is_ok()) return st;
  DatasetIndex& index = run.index;
  if (Status st = load_index(c.data, index, c.data_outside); !st.is_ok()) return st;
  r.dataset_size = index.samples.size();
  r.index_warnings = index.warnings;
  if (index.samples.size() < static_cast<std::size_t>(c.batch))
    return Status::invalid(fmt::format("--batch {} is larger than the dataset ({} samples in '{}')", c.batch,
                                       index.samples.size(), c.data));

  std::unique_ptr<DeviceStage>& stage = run.stage;
  if (c.device != DeviceKind::none) {
    std::string why;
    if (cuda_device_present(why)) {
      if (Status st = make_cuda_stage(c, stage); !st.is_ok()) return st;
      c.device = DeviceKind::cuda;
    } else if (c.device == DeviceKind::cuda) {
      return Status::unavailable(fmt::format("--device cuda: no usable CUDA device ({})", why));
    } else {
      r.device_notice = fmt::format("no CUDA device ({}): running CPU-only, a host stand-in plays the GPU step (--device none)", why);
    }
  }
  if (!stage) {
    c.device = DeviceKind::none;
    stage = make_host_standin(c, stop);
  }
  r.config = c;
  r.device = stage->stats();  // known at start-up (the calibration's notes); settled again at the end

  // Slots: `prefetch` ready ahead + the consumer's + any still being read by an in-flight copy.
  r.slots = slot_count(c, stage->extra_slots());
  if (Status st = BatchPool::create(r.slots, batch_bytes(c), stage->allocator(), run.pool); !st.is_ok()) return st;

  if (c.profile) {
    SessionOptions so;
    so.cpu_time = c.cpu_time;
    if (c.nvtx_only) {  // the host records only feed the NVTX mirror; nothing is kept
      so.cpu_time = false;
      so.cupti = false;
      so.nvtx = true;
    }
    // A device all-reduce's kernels may be launched through the driver API (NCCL does): record those
    // calls too, so the kernels link to the collective range that enqueued them.
    if (with_collective) so.cupti_driver = true;
    if (Status st = stage->install_collectors(run.session); !st.is_ok()) return st;
    if (Status st = run.session.start(so); !st.is_ok()) return st;
    to_meta(c, run.session.mutable_trace().meta.config);
  }
  return Status::ok();
}

// The steps: each waits for its batch and submits it; with ranks, every step ends at the collective,
// where leaving is agreed (a rank never breaks out alone). Step times and waits go into the result.
class StepLoop {
 public:
  StepLoop(OpenRun& run, RunResult& r, const std::atomic<bool>* stop, const PhaseCallback& on_phase, StepCollective* collective)
      : run_(run), c_(run.c), r_(r), stop_(stop), on_phase_(on_phase), collective_(collective) {
    // Reserved: no allocation in the loop.
    if (collective_ != nullptr) collective_spans.reserve(static_cast<std::size_t>(c_.warmup + c_.steps));
  }
  void run(Producer& producer);

  Status failure;                 // the first failure of a step or of the collective
  std::int64_t steady_begin = 0;  // when the steady steps began (after the warm-up drained)
  struct Span {
    std::int64_t step, begin_ns, end_ns;
  };
  std::vector<Span> collective_spans;  // the collective's spans per step, for the stand-in's device records

 private:
  // With ranks: meets the others at the end of step s; true when the loop must stop after it.
  bool rank_step_end(std::int64_t s);
  bool stopped() const { return stop_ != nullptr && stop_->load(); }

  OpenRun& run_;
  const RunConfig& c_;
  RunResult& r_;
  const std::atomic<bool>* stop_;
  const PhaseCallback& on_phase_;
  StepCollective* collective_;
  bool leaving_ = false;
};

bool StepLoop::rank_step_end(std::int64_t s) {
  if (collective_ == nullptr) return leaving_;
  StepEnd end;
  bool failed = false;
  const std::int64_t b = now_ns();
  {
    STALLDX_RANGE(collective, "all_reduce", RangeIds{s, s, -1});
    if (Status st = collective_->after_step(s, leaving_, end); !st.is_ok()) {
      if (failure.is_ok()) failure = st;
      failed = true;
    }
  }
  if (end.stopped_waiting) {
    r_.interrupted = true;
    r_.stuck_in_collective_step = s;
  }
  if (!leaving_ && end.leaver >= 0) r_.stopped_by_rank = end.leaver;
  const bool stop_all = failed || end.any_leaving();
  if (!stop_all) collective_spans.push_back({s, b, now_ns()});
  return leaving_ || stop_all;
}

void StepLoop::run(Producer& producer) {
  BatchPool& pool = *run_.pool;
  DeviceStage& stage = *run_.stage;
  const int total = c_.warmup + c_.steps;
  std::int64_t prev_end = now_ns();
  steady_begin = prev_end;
  for (int s = 0; s < total; ++s) {
    if (stopped()) {
      r_.interrupted = true;
      leaving_ = true;
      rank_step_end(s);
      break;
    }
    if (s == 0 && on_phase_) on_phase_(RunPhase::started);
    if (s == c_.warmup) {
      // Steady state starts once the warm-up steps have finished on the device too; otherwise queued
      // warm-up work would be counted against steady-state images (device_stage.h steady_begins).
      if (Status st = stage.steady_begins(); !st.is_ok()) { failure = st; leaving_ = true; rank_step_end(s); break; }
      if (on_phase_) on_phase_(RunPhase::steady);
      prev_end = now_ns();
      steady_begin = prev_end;
    }
    double wait_ms = 0;
    bool consumed = false, any_leaving = false;
    {
      StepMark mark(s, s);
      BatchSlot* slot = nullptr;
      {
        STALLDX_RANGE(wait_batch, "wait_batch", RangeIds{s, s, -1});
        const std::int64_t w0 = now_ns();
        slot = pool.wait_ready(s, stop_);
        wait_ms = (now_ns() - w0) / 1e6;
      }
      if (slot == nullptr && stopped()) {
        r_.interrupted = true;
        leaving_ = true;
      } else if (slot == nullptr || producer.failed()) {
        r_.failed_bad_sample = producer.failed();
        leaving_ = true;
      } else {
        r_.bad_images_consumed += static_cast<std::uint64_t>(slot->not_own.load(std::memory_order_relaxed));  // mark_ready published it
        const std::uint64_t sum = c_.verify ? host_checksum(slot->data, slot->bytes) : 0;
        if (c_.verify) r_.batch_checksums.push_back(sum);
        std::function<void()> fence;
        failure = stage.submit_step(s, *slot, sum, fence);
        pool.release(slot, std::move(fence));
        if (!failure.is_ok()) leaving_ = true;
        consumed = failure.is_ok();
      }
      any_leaving = rank_step_end(s);
      if (!consumed) break;
    }
    const std::int64_t end = now_ns();
    const double ms = (end - prev_end) / 1e6;
    prev_end = end;
    r_.steps_completed = s + 1;
    if (s < c_.warmup) r_.warmup_step_ms.push_back(ms);
    else { r_.step_ms.push_back(ms); r_.wait_ms.push_back(wait_ms); }
    if (any_leaving) {
      if (!leaving_) r_.interrupted = true;  // another rank left: this one stops with it
      break;
    }
  }
}

// Close: the session stopped and its trace completed with the stage's records — the stand-in's all-reduce
// as device work of its own (NCCL's kernels would be), NCCL's kernels given the collective's bytes — and
// the rank facts of how the run ended.
void close_trace(OpenRun& run, const StepLoop& loop, StepCollective* collective, RunResult& r) {
  const RunConfig& c = run.c;
  if (!c.profile) return;
  if (c.nvtx_only) {
    run.session.stop();
    return;
  }
  run.session.set_interrupted(r.interrupted, r.steps_completed);
  run.session.stop();
  Trace& t = run.session.mutable_trace();
  run.stage->append_records(t);
  if (collective != nullptr && r.device.standin) {
    const NameId name = t.intern(collective->describe());
    for (const StepLoop::Span& span : loop.collective_spans) {
      DeviceActivity a;
      a.begin_ns = span.begin_ns;
      a.end_ns = span.end_ns;
      a.device = -1;
      a.stream = 1;  // its own lane beside the stand-in's step
      a.kind = ActivityKind::standin;
      a.name = name;
      a.bytes = collective->bytes();
      a.step = span.step;
      t.activities.push_back(a);
    }
  }
  if (collective != nullptr && !r.device.standin)
    for (std::size_t i : activities_launched_within(t, Role::collective))
      if (t.activities[i].bytes == 0 && is_device_work(t.activities[i].kind)) t.activities[i].bytes = collective->bytes();
  if (r.stuck_in_collective_step >= 0) t.meta.config[rank_facts::kStuckInCollectiveStep] = std::to_string(r.stuck_in_collective_step);
  if (r.stopped_by_rank >= 0) t.meta.config[rank_facts::kStoppedByRank] = std::to_string(r.stopped_by_rank);
  t.meta.device = r.device.description;
  t.meta.standin = r.device.standin;
  r.trace = std::move(t);
  r.has_trace = true;
}

// A run that consumed too many images not from their own file, or that a bad sample stopped, did not
// measure the dataset it was given: an error, naming the first bad file.
Status check_samples(const RunConfig& c, const RunResult& r) {
  // Substituted images past the threshold: the run did not measure the dataset it was given.
  const std::uint64_t consumed = static_cast<std::uint64_t>(r.steps_completed) * static_cast<std::uint64_t>(c.batch);
  if (consumed > 0 && static_cast<double>(r.bad_images_consumed) > c.max_bad_fraction * static_cast<double>(consumed))
    return Status::invalid(fmt::format(
        "{} of the {} images consumed ({:.0f}%) were not from their own file — over --max-bad-fraction {} (all loaded: {} substituted, "
        "{} left zero; {} bad files met {} times). First: {}",
        r.bad_images_consumed, consumed, 100.0 * static_cast<double>(r.bad_images_consumed) / static_cast<double>(consumed),
        c.max_bad_fraction, r.bad.substituted, r.bad.unfilled, r.bad.files, r.bad.attempts,
        r.bad.first.empty() ? "?" : r.bad.first.front()));
  if (r.failed_bad_sample)
    return Status::invalid(fmt::format("a bad sample stopped the run (--on-bad-sample fail): {}",
                                       r.bad.first.empty() ? "?" : r.bad.first.front()));
  return Status::ok();
}

}  // namespace

Status run_pipeline(const RunConfig& config_in, RunResult& r, const std::atomic<bool>* stop, const PhaseCallback& on_phase,
                    StepCollective* collective) {
  r = RunResult{};
  // With ranks, every rank reaches the collective's start, a rank whose set-up failed too (with no
  // stage: the others learn it there), so no rank waits at the first step for one that returned.
  struct StartGate {
    StepCollective* collective;
    bool started = false;
    ~StartGate() {
      if (collective != nullptr && !started) collective->start(nullptr);
    }
  } gate{collective};
  OpenRun run;
  if (Status st = open_run(config_in, stop, collective != nullptr, run, r); !st.is_ok()) return st;
  if (collective != nullptr) {
    gate.started = true;
    if (Status st = collective->start(run.stage.get()); !st.is_ok()) return st;
  }
  set_thread_name("consumer");

  BadSampleLog bad;
  Producer producer(run.c, run.index, *run.pool, bad);
  producer.start();
  CompetingLoad hogs(run.c.competing_threads);
  StepLoop loop(run, r, stop, on_phase, collective);
  loop.run(producer);
  Status fin = run.stage->finish();
  const std::int64_t steady_end = now_ns();
  hogs.stop();
  producer.stop();
  const Status failure = loop.failure.is_ok() ? fin : loop.failure;

  r.device = run.stage->stats();
  r.bad = bad.snapshot();
  r.cache_misses = producer.cache_misses();
  r.images = static_cast<std::uint64_t>(r.step_ms.size()) * static_cast<std::uint64_t>(run.c.batch);
  const double device_s = run.stage->steady_device_seconds();
  r.seconds = device_s > 0 ? device_s : (steady_end - loop.steady_begin) / 1e9;
  r.images_per_second = r.seconds > 0 ? static_cast<double>(r.images) / r.seconds : 0;
  fill_stats(r);
  close_trace(run, loop, collective, r);
  if (!failure.is_ok()) return failure;
  return check_samples(run.c, r);
}

}  // namespace stalldx::pipeline
