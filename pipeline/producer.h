// The producer: a dispatcher thread that takes free slots, assigns them the next batch from the
// sampler, and has a oneTBB arena of `workers` threads fill them (per-sample SampleLoader tasks).
// Samples start in stream order, so batches complete nearly in order; the consumer asks the pool for them in order.
#pragma once

#include <atomic>
#include <memory>
#include <thread>

#include "stalldx/pipeline/bad_samples.h"
#include "stalldx/stage/batch_pool.h"
#include "dataset_index.h"
#include "stalldx/run_config.h"
#include "storage.h"

namespace stalldx::pipeline {

class Producer {
 public:
  // `pool`, `index`, `config` and `bad` must outlive the producer.
  Producer(const RunConfig& config, const DatasetIndex& index, BatchPool& pool, BadSampleLog& bad);
  ~Producer();  // stops and joins
  void start();
  // Stops dispatching, closes the pool, waits for in-flight samples. Idempotent.
  void stop();
  bool failed() const { return failed_.load(); }    // a bad sample under --on-bad-sample fail
  std::uint64_t cache_misses() const;                // reads that missed the page cache (--cold-cache)

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> failed_{false};
};

}  // namespace stalldx::pipeline
