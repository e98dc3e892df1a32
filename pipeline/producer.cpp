#include "producer.h"

#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <sched.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "sample_loader.h"
#include "sampler.h"
#include "stalldx/profiler.h"

namespace stalldx::pipeline {


namespace {
// Producer threads are throughput work: SCHED_BATCH (no privileges needed) keeps them from preempting
// the consumer when it wakes them — on a machine with few cores the woken dispatcher or decoder would
// otherwise take the consumer's core right after each step and delay its next submission.
void batch_scheduling() {
  sched_param p{};
  p.sched_priority = 0;
  sched_setscheduler(0, SCHED_BATCH, &p);  // best effort: the calling thread only (Linux)
}
}  // namespace

struct Producer::Impl {
  const RunConfig& config;
  const DatasetIndex& index;
  BatchPool& pool;
  BadSampleLog& bad;
  Producer& owner;
  std::atomic<bool> stopping{false};  // before `storage`, which watches it
  StorageReader storage;
  SampleLoader loader;
  ShuffleSampler sampler;
  tbb::global_control threads;   // lets the arena have `workers` threads even above the core count
  tbb::task_arena arena;
  std::vector<std::atomic<int>> remaining_by_slot;  // samples left per slot id
  // Samples in stream order. The arena's queue is only roughly FIFO (several lanes), so samples of the
  // next batches would start before the current one's last samples and batches would complete in
  // pairs; instead every arena task takes the next sample from this ring, so samples start in order.
  // Capacity: one batch per slot — a sample's entry is overwritten only after its slot was freed,
  // which needs every sample of its batch finished.
  struct Ticket {
    BatchSlot* slot;
    int i;
    std::uint64_t first;
    std::atomic<int>* remaining;
  };
  std::vector<Ticket> order;
  std::uint64_t order_written = 0;                // dispatcher only
  std::atomic<std::uint64_t> order_published{0};  // entries below this are written (release)
  std::atomic<std::uint64_t> order_taken{0};      // next entry a task takes
  std::atomic<std::int64_t> pending{0};             // enqueued samples not yet finished
  std::mutex idle_mu;
  std::condition_variable idle_cv;
  std::thread dispatcher;
  std::atomic<int> busy{0};

  Impl(const RunConfig& c, const DatasetIndex& i, BatchPool& p, BadSampleLog& b, Producer& o)
      : config(c), index(i), pool(p), bad(b), owner(o),
        storage(StorageKnobs{c.read_latency_ms, c.read_bandwidth_mbps, c.cold_cache, 64ull << 20, i.confine}, &stopping),
        loader(c, i, storage, b),
        sampler(static_cast<std::uint32_t>(i.samples.size()), c.seed, c.transform == TransformKind::train, c.rank, c.world_size),
        threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(c.workers) + 1),
        arena(c.workers, 0), remaining_by_slot(static_cast<std::size_t>(p.size())),
        order(static_cast<std::size_t>(p.size()) * static_cast<std::size_t>(c.batch)) {}

  // One arena task: the next sample in stream order. There are as many tasks as published entries,
  // so the entry taken is always published; the acquire load makes its contents visible.
  void load_next() {
    const std::uint64_t pos = order_taken.fetch_add(1, std::memory_order_relaxed);
    while (order_published.load(std::memory_order_acquire) <= pos) std::this_thread::yield();  // never taken in practice
    const Ticket t = order[pos % order.size()];
    load_sample(t.slot, t.i, t.first, t.remaining);
  }

  // One sample on a worker. Samples start in stream order (load_next), so workers finish the oldest
  // batch first: batches complete in order, at a steady pace, instead of in bursts. The last sample of a batch hands the slot to the consumer.
  void load_sample(BatchSlot* slot, int i, std::uint64_t first_position, std::atomic<int>* remaining) {
    static const NameId kBusy = register_name("busy_workers");
    thread_local bool named = false;  // names this worker's trace lane once
    if (!named) {
      set_thread_name("worker");
      batch_scheduling();
      named = true;
    }
    if (!stopping.load(std::memory_order_relaxed)) {
      counter(kBusy, busy.fetch_add(1, std::memory_order_relaxed) + 1);
      const auto u = static_cast<std::size_t>(i);
      SampleTask t{slot->batch, static_cast<std::int64_t>(first_position) + i, slot->indices[u],
                   config.spike_every > 0 && slot->batch % config.spike_every == config.spike_every - 1 && i == 0,
                   slot->data + u * sample_bytes(config)};
      bool failed = false;
      const std::uint32_t got = loader.load(t, failed);
      if (got != t.index) slot->not_own.fetch_add(1, std::memory_order_relaxed);  // rare: a bad file
      if (got != UINT32_MAX) {
        slot->indices[u] = got;
        slot->labels[u] = index.samples[got].label;
      }
      if (failed) owner.failed_.store(true);
      counter(kBusy, busy.fetch_sub(1, std::memory_order_relaxed) - 1);
    }
    if (remaining->fetch_sub(1, std::memory_order_acq_rel) == 1 && !stopping.load()) {
      // The batch's last sample: hand the finished slot (data written in place, labels set) to the consumer.
      STALLDX_RANGE(collate, "collate", RangeIds{-1, slot->batch, -1});
      pool.mark_ready(slot);
    }
    // Decrement under the lock: stop() can only see zero (and destroy this Impl) after we let go of it.
    std::lock_guard<std::mutex> lock(idle_mu);
    if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) idle_cv.notify_all();
  }

  void dispatch_loop() {
    set_thread_name("dispatcher");
    batch_scheduling();
    std::int64_t next_batch = 0;
    // As a training loop's loader would, keep `prefetch` batches ahead to the very end, so the last steps
    // look like steady state; unstarted samples of those extra batches are skipped at stop().
    const std::int64_t needed = static_cast<std::int64_t>(config.warmup) + config.steps + config.prefetch;
    while (!stopping.load() && next_batch < needed) {
      BatchSlot* slot = pool.acquire_free();
      if (slot == nullptr) break;
      slot->batch = next_batch++;
      slot->not_own.store(0, std::memory_order_relaxed);
      const std::uint64_t first = sampler.next_batch(config.batch, slot->indices);
      slot->labels.resize(slot->indices.size());
      for (std::size_t i = 0; i < slot->indices.size(); ++i) slot->labels[i] = index.samples[slot->indices[i]].label;
      std::atomic<int>* remaining = &remaining_by_slot[static_cast<std::size_t>(slot->id)];
      remaining->store(config.batch);
      pending.fetch_add(config.batch, std::memory_order_acq_rel);
      for (int i = 0; i < config.batch; ++i) order[(order_written + static_cast<std::uint64_t>(i)) % order.size()] = {slot, i, first, remaining};
      order_written += static_cast<std::uint64_t>(config.batch);
      order_published.store(order_written, std::memory_order_release);
      for (int i = 0; i < config.batch; ++i) arena.enqueue([this] { load_next(); });
    }
  }
};

Producer::Producer(const RunConfig& config, const DatasetIndex& index, BatchPool& pool, BadSampleLog& bad)
    : impl_(std::make_unique<Impl>(config, index, pool, bad, *this)) {}

Producer::~Producer() { stop(); }

void Producer::start() {
  impl_->arena.execute([] {});  // create the arena's threads before the first batch is timed
  impl_->dispatcher = std::thread([this] { impl_->dispatch_loop(); });
}

std::uint64_t Producer::cache_misses() const { return impl_ ? impl_->storage.cache_misses() : 0; }

void Producer::stop() {
  if (!impl_) return;
  impl_->stopping.store(true);
  impl_->pool.close();
  if (impl_->dispatcher.joinable()) impl_->dispatcher.join();
  std::unique_lock<std::mutex> lock(impl_->idle_mu);
  impl_->idle_cv.wait(lock, [this] { return impl_->pending.load() == 0; });
}

}  // namespace stalldx::pipeline
