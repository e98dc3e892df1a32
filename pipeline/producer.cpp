#include "producer.h"

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>
#include <tbb/task_scheduler_observer.h>

#include "sample_loader.h"
#include "sampler.h"
#include "stalldx/profiler.h"

namespace stalldx::pipeline {

namespace {
// Names the arena's worker threads' trace lanes as they join it.
class WorkerNamer final : public tbb::task_scheduler_observer {
 public:
  explicit WorkerNamer(tbb::task_arena& a) : tbb::task_scheduler_observer(a) { observe(true); }
  ~WorkerNamer() override { observe(false); }
  void on_scheduler_entry(bool) override { set_thread_name("worker"); }
};
}  // namespace

struct Producer::Impl {
  const RunConfig& config;
  const DatasetIndex& index;
  BatchPool& pool;
  BadSampleLog& bad;
  Producer& owner;
  StorageReader storage;
  SampleLoader loader;
  ShuffleSampler sampler;
  tbb::global_control threads;   // lets the arena have `workers` threads even above the core count
  tbb::task_arena arena;
  WorkerNamer namer{arena};
  tbb::task_group group;
  std::thread dispatcher;
  std::atomic<bool> stopping{false};
  std::atomic<int> busy{0};

  Impl(const RunConfig& c, const DatasetIndex& i, BatchPool& p, BadSampleLog& b, Producer& o)
      : config(c), index(i), pool(p), bad(b), owner(o),
        storage(StorageKnobs{c.read_latency_ms, c.read_bandwidth_mbps, c.cold_cache}),
        loader(c, i, storage, b),
        sampler(static_cast<std::uint32_t>(i.samples.size()), c.seed, c.transform == TransformKind::train),
        threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(c.workers) + 1),
        arena(c.workers, 0) {}

  void fill(BatchSlot* slot, std::uint64_t first_position) {
    static const NameId kBusy = register_name("busy_workers");
    const std::size_t sbytes = sample_bytes(config);
    tbb::parallel_for(tbb::blocked_range<int>(0, config.batch, 1), [&](const tbb::blocked_range<int>& r) {
      for (int i = r.begin(); i != r.end(); ++i) {
        if (stopping.load(std::memory_order_relaxed)) return;
        counter(kBusy, busy.fetch_add(1, std::memory_order_relaxed) + 1);
        const auto u = static_cast<std::size_t>(i);
        SampleTask t{slot->batch, static_cast<std::int64_t>(first_position) + i, slot->indices[u],
                     config.spike_every > 0 && slot->batch % config.spike_every == config.spike_every - 1 && i == 0,
                     slot->data + u * sbytes};
        bool failed = false;
        const std::uint32_t got = loader.load(t, failed);
        if (got != t.index) slot->bad_replaced.fetch_add(1, std::memory_order_relaxed);
        if (got != UINT32_MAX) {
          slot->indices[u] = got;
          slot->labels[u] = index.samples[got].label;
        }
        if (failed) owner.failed_.store(true);
        owner.samples_.fetch_add(1, std::memory_order_relaxed);
        counter(kBusy, busy.fetch_sub(1, std::memory_order_relaxed) - 1);
      }
    });
    if (!stopping.load()) pool.mark_ready(slot);
  }

  void dispatch_loop() {
    set_thread_name("dispatcher");
    std::int64_t next_batch = 0;
    const std::int64_t needed = static_cast<std::int64_t>(config.warmup) + config.steps;  // no work past the last step
    while (!stopping.load() && next_batch < needed) {
      BatchSlot* slot = pool.acquire_free();
      if (slot == nullptr) break;
      slot->batch = next_batch++;
      slot->bad_replaced.store(0);
      const std::uint64_t first = sampler.next_batch(config.batch, slot->indices);
      slot->labels.resize(slot->indices.size());
      for (std::size_t i = 0; i < slot->indices.size(); ++i) slot->labels[i] = index.samples[slot->indices[i]].label;
      arena.execute([&, slot, first] { group.run([this, slot, first] { fill(slot, first); }); });
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

void Producer::stop() {
  if (!impl_) return;
  impl_->stopping.store(true);
  impl_->pool.close();
  if (impl_->dispatcher.joinable()) impl_->dispatcher.join();
  impl_->arena.execute([this] { impl_->group.wait(); });
}

}  // namespace stalldx::pipeline
