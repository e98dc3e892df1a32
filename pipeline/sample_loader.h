// One sample, start to finish, on a worker thread: retrieval (role `retrieval`) then decode + transform
// into its place in the batch slot (role `decode`). Bad files are logged and replaced by the next
// dataset index that loads, so a batch is always full.
#pragma once

#include <cstdint>

#include "stalldx/pipeline/bad_samples.h"
#include "dataset_index.h"
#include "stalldx/run_config.h"
#include "storage.h"

namespace stalldx::pipeline {

struct SampleTask {
  std::int64_t batch;
  std::int64_t sample;            // position in the sample stream (seeds the augmentation)
  std::uint32_t index;            // dataset index
  bool slow;                      // periodic slow-file knob applies to this read
  void* dst;                      // this sample's place in the slot
};

class SampleLoader {
 public:
  SampleLoader(const RunConfig& config, const DatasetIndex& index, StorageReader& storage, BadSampleLog& bad)
      : config_(config), index_(index), storage_(storage), bad_(bad) {}
  // Returns the dataset index that finally filled the sample (== task.index unless substituted: then
  // counted as a substituted image), or UINT32_MAX if none did (the sample is zero-filled and counted;
  // also when the read was cancelled because the run is stopping — then not counted). Sets `failed`
  // under --on-bad-sample fail.
  std::uint32_t load(const SampleTask& task, bool& failed) const;

 private:
  enum class Outcome { ok, bad, cancelled };
  Outcome try_load(const SampleTask& task, std::uint32_t index, bool slow) const;
  const RunConfig& config_;
  const DatasetIndex& index_;
  StorageReader& storage_;
  BadSampleLog& bad_;
};

}  // namespace stalldx::pipeline
