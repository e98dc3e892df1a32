// Seeded shuffling sampler over epochs: position g of the sample stream is permutation(epoch = g / N)[g % N].
// Deterministic for (seed, N); not thread-safe (one producer drives it).
#pragma once

#include <cstdint>
#include <vector>

namespace stalldx::pipeline {

std::uint64_t mix64(std::uint64_t a, std::uint64_t b) noexcept;

class ShuffleSampler {
 public:
  ShuffleSampler(std::uint32_t dataset_size, std::uint64_t seed, bool shuffle = true);
  // Fills `out` with the next `batch` dataset indices; returns the stream position of the first.
  std::uint64_t next_batch(int batch, std::vector<std::uint32_t>& out);
  const std::vector<std::uint32_t>& permutation(std::uint64_t epoch);

 private:
  std::uint32_t n_;
  std::uint64_t seed_;
  bool shuffle_;
  std::uint64_t position_ = 0;
  std::uint64_t epoch_ = ~0ull;
  std::vector<std::uint32_t> perm_;
};

}  // namespace stalldx::pipeline
