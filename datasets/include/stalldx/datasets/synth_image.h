// Natural-image-like synthetic content: what a JPEG decoder sees in a food photo (smooth shading,
// object edges, fine texture, sensor noise) without shipping photos. Deterministic for (seed, index).
#pragma once

#include <cstdint>
#include <vector>

namespace stalldx::datasets {

struct ImageSpec {
  int width = 512, height = 384;
  int quality = 90;
  float detail = 1.f;  // scales the fine texture and the grain: file size grows with it (1: the default set, ~36 KB mean)
};

// Picks a Food-101-like size and quality for image `index` of a dataset generated with `seed`.
ImageSpec pick_spec(std::uint64_t seed, std::uint64_t index);

// Interleaved RGB8, width*height*3 bytes.
std::vector<std::uint8_t> synthesize_rgb(const ImageSpec& spec, std::uint64_t seed, std::uint64_t index);

}  // namespace stalldx::datasets
