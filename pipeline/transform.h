// Geometry of the per-sample transforms (torchvision semantics) and the resampler that writes a decoded
// region straight into a batch slot.
#pragma once

#include <cstdint>
#include <random>

#include "stalldx/run_config.h"

namespace stalldx::pipeline {

// A crop of the source image in full-resolution pixel coordinates, plus the flip decision.
struct CropBox {
  int x = 0, y = 0, w = 0, h = 0;
  bool flip = false;
  bool operator==(const CropBox&) const = default;
};

// RandomResizedCrop(scale 0.08–1, ratio 3/4–4/3) box as torchvision computes it (10 tries, then a
// center crop clamped to the ratio range) + horizontal flip with p = 0.5.
CropBox random_resized_crop(int width, int height, std::mt19937_64& rng);
// Resize(shorter side = size * 256/224) + CenterCrop(size), expressed as a box in the source.
CropBox center_crop_box(int width, int height, int size);

// DCT scale denominator (1, 2, 4 or 8) for decoding `box` to a `target`-pixel square: the largest d with
// box.w / d >= target and box.h / d >= target, i.e. the source region is at least d× the target.
int choose_dct_denominator(const CropBox& box, int target, bool enabled);

// A decoded RGB8 region: pixel (0,0) is source pixel (origin_x, origin_y) at scale 1/denom.
struct DecodedRegion {
  const std::uint8_t* rgb = nullptr;
  int width = 0, height = 0, stride = 0;   // stride in bytes
  int origin_x = 0, origin_y = 0;          // in scaled coordinates
  int denom = 1;
};

// Resamples `box` (full-resolution coords) from `region` into a size×size output at `dst`: float32 NCHW
// normalized with ImageNet mean/std, or uint8 NHWC; flips when box.flip. The filter is bilinear (a
// triangle), widened by the scale factor when the box is larger than the output — antialiased as
// torchvision's Resize(antialias=True) and PIL are, so a downscale does not alias. resample.cpp; no
// allocation after a thread's first calls (its buffers are thread-local and grow only).
void resample_into(const DecodedRegion& region, const CropBox& box, int size, OutputFormat format, void* dst);

}  // namespace stalldx::pipeline
