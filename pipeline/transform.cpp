#include "transform.h"

#include <algorithm>
#include <cmath>

namespace stalldx::pipeline {

CropBox random_resized_crop(int W, int H, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> scale(0.08, 1.0);
  std::uniform_real_distribution<double> log_ratio(std::log(3.0 / 4.0), std::log(4.0 / 3.0));
  const double area = static_cast<double>(W) * H;
  CropBox b;
  bool found = false;
  for (int attempt = 0; attempt < 10 && !found; ++attempt) {
    const double target = area * scale(rng);
    const double ar = std::exp(log_ratio(rng));
    const int w = static_cast<int>(std::lround(std::sqrt(target * ar)));
    const int h = static_cast<int>(std::lround(std::sqrt(target / ar)));
    if (w > 0 && h > 0 && w <= W && h <= H) {
      b.w = w;
      b.h = h;
      b.y = std::uniform_int_distribution<int>(0, H - h)(rng);
      b.x = std::uniform_int_distribution<int>(0, W - w)(rng);
      found = true;
    }
  }
  if (!found) {  // fallback: whole image clamped to the ratio range, centered
    const double in_ratio = static_cast<double>(W) / H;
    if (in_ratio < 3.0 / 4.0) { b.w = W; b.h = static_cast<int>(std::lround(W / (3.0 / 4.0))); }
    else if (in_ratio > 4.0 / 3.0) { b.h = H; b.w = static_cast<int>(std::lround(H * (4.0 / 3.0))); }
    else { b.w = W; b.h = H; }
    b.h = std::min(b.h, H);
    b.w = std::min(b.w, W);
    b.x = (W - b.w) / 2;
    b.y = (H - b.h) / 2;
  }
  b.flip = (rng() & 1) != 0;
  return b;
}

CropBox center_crop_box(int W, int H, int size) {
  // Resize shorter side to size*256/224, then take the central size×size: in source pixels the box is
  // a square of side shorter * 224/256.
  const int shorter = std::min(W, H);
  const int side = std::max(1, static_cast<int>(std::lround(shorter * 224.0 / 256.0)));
  (void)size;
  CropBox b;
  b.w = b.h = side;
  b.x = (W - side) / 2;
  b.y = (H - side) / 2;
  return b;
}

int choose_dct_denominator(const CropBox& box, int target, bool enabled) {
  if (!enabled) return 1;
  for (int d : {8, 4, 2})
    if (box.w >= d * target && box.h >= d * target) return d;
  return 1;
}

}  // namespace stalldx::pipeline
