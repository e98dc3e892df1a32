// Natural-image-like synthetic content: what a JPEG decoder sees in a food photo (smooth shading,
// object edges, fine texture, sensor noise) without shipping photos. Deterministic for (seed, index).
#pragma once

#include <cstdint>
#include <vector>

namespace stalldx::datasets {

struct ImageSpec {
  int width = 512, height = 384;
  int quality = 90;
};

// Picks a Food-101-like size and quality for image `index` of a dataset generated with `seed`.
ImageSpec pick_spec(std::uint64_t seed, std::uint64_t index);

// Interleaved RGB8, width*height*3 bytes.
std::vector<std::uint8_t> synthesize_rgb(const ImageSpec& spec, std::uint64_t seed, std::uint64_t index);

}  // namespace stalldx::datasets
