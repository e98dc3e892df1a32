#include "sampler.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace stalldx::pipeline {

std::uint64_t mix64(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t z = a * 0x9E3779B97F4A7C15ull ^ (b + 0xD1B54A32D192ED03ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

ShuffleSampler::ShuffleSampler(std::uint32_t n, std::uint64_t seed, bool shuffle, int rank, int world)
    : n_(n), rank_(rank), world_(std::max(world, 1)),
      shard_(static_cast<std::uint32_t>((static_cast<std::uint64_t>(n) + static_cast<std::uint64_t>(world_) - 1) / static_cast<std::uint64_t>(world_))),
      seed_(seed), shuffle_(shuffle) {}

const std::vector<std::uint32_t>& ShuffleSampler::permutation(std::uint64_t epoch) {
  if (epoch != epoch_) {
    perm_.resize(n_);
    std::iota(perm_.begin(), perm_.end(), 0u);
    if (shuffle_) {
      std::mt19937_64 rng(mix64(seed_, epoch));
      for (std::uint32_t i = n_; i > 1; --i) {
        const auto j = static_cast<std::uint32_t>(rng() % i);
        std::swap(perm_[i - 1], perm_[j]);
      }
    }
    epoch_ = epoch;
  }
  return perm_;
}

std::uint64_t ShuffleSampler::next_batch(int batch, std::vector<std::uint32_t>& out) {
  const std::uint64_t first = position_;
  out.resize(static_cast<std::size_t>(batch));
  for (int i = 0; i < batch; ++i, ++position_) {
    const std::uint64_t at = static_cast<std::uint64_t>(rank_) + (position_ % shard_) * static_cast<std::uint64_t>(world_);
    out[static_cast<std::size_t>(i)] = permutation(position_ / shard_)[at % n_];  // at >= n_: the padding, from the start
  }
  return first;
}

}  // namespace stalldx::pipeline
