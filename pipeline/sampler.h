// Seeded shuffling sampler over epochs, sharded across ranks as torch's DistributedSampler: every rank
// draws the same permutation of the N samples per epoch (seeded by seed and epoch), padded to
// M·world by repeating its start, where M = ceil(N / world); rank r takes its positions r, r + world,
// r + 2·world, ... — M samples per epoch, every sample once per epoch across ranks (the padding's few
// twice). Position g of rank r's stream is padded_permutation(epoch = g / M)[r + (g % M)·world].
// Deterministic for (seed, N, rank, world); not thread-safe (one producer drives it).
#pragma once

#include <cstdint>
#include <vector>

namespace stalldx::pipeline {

std::uint64_t mix64(std::uint64_t a, std::uint64_t b) noexcept;

class ShuffleSampler {
 public:
  ShuffleSampler(std::uint32_t dataset_size, std::uint64_t seed, bool shuffle = true, int rank = 0, int world = 1);
  std::uint32_t shard_size() const { return shard_; }
  // Fills `out` with the next `batch` dataset indices; returns the stream position of the first.
  std::uint64_t next_batch(int batch, std::vector<std::uint32_t>& out);
  const std::vector<std::uint32_t>& permutation(std::uint64_t epoch);

 private:
  std::uint32_t n_;
  int rank_, world_;
  std::uint32_t shard_;  // M: samples per rank per epoch
  std::uint64_t seed_;
  bool shuffle_;
  std::uint64_t position_ = 0;
  std::uint64_t epoch_ = ~0ull;
  std::vector<std::uint32_t> perm_;
};

}  // namespace stalldx::pipeline
