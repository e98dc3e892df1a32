#include "transform.h"

#include <algorithm>
#include <cmath>
#include <vector>

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

namespace {
struct Tap {
  int i0, i1;
  float w1;  // weight of i1; i0 gets 1 - w1
};
// Output pixel o of n covers source [start + o*step, ...]; centre-aligned like torchvision (align_corners=False).
void make_taps(std::vector<Tap>& taps, int n, double start, double extent, int lo, int hi) {
  taps.resize(static_cast<std::size_t>(n));
  const double step = extent / n;
  for (int o = 0; o < n; ++o) {
    double s = start + (o + 0.5) * step - 0.5;
    s = std::clamp(s, static_cast<double>(lo), static_cast<double>(hi));
    const int i0 = static_cast<int>(std::floor(s));
    const int i1 = std::min(i0 + 1, hi);
    taps[static_cast<std::size_t>(o)] = {i0, i1, static_cast<float>(s - i0)};
  }
}
constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};
}  // namespace

void resample_into(const DecodedRegion& r, const CropBox& box, int size, OutputFormat format, void* dst) {
  thread_local std::vector<Tap> xt, yt;
  const double d = r.denom;
  // Box in the region's own coordinates.
  make_taps(xt, size, box.x / d - r.origin_x, box.w / d, 0, r.width - 1);
  make_taps(yt, size, box.y / d - r.origin_y, box.h / d, 0, r.height - 1);
  if (box.flip) std::reverse(xt.begin(), xt.end());
  const std::size_t plane = static_cast<std::size_t>(size) * size;
  float scale[3], bias[3];
  for (int c = 0; c < 3; ++c) { scale[c] = 1.f / (255.f * kStd[c]); bias[c] = -kMean[c] / kStd[c]; }
  for (int oy = 0; oy < size; ++oy) {
    const Tap& ty = yt[static_cast<std::size_t>(oy)];
    const std::uint8_t* r0 = r.rgb + static_cast<std::size_t>(ty.i0) * r.stride;
    const std::uint8_t* r1 = r.rgb + static_cast<std::size_t>(ty.i1) * r.stride;
    const float wy1 = ty.w1, wy0 = 1.f - ty.w1;
    if (format == OutputFormat::float32_nchw) {
      float* out = static_cast<float*>(dst) + static_cast<std::size_t>(oy) * size;
      for (int ox = 0; ox < size; ++ox) {
        const Tap& tx = xt[static_cast<std::size_t>(ox)];
        const float wx1 = tx.w1, wx0 = 1.f - tx.w1;
        const std::uint8_t* a = r0 + tx.i0 * 3; const std::uint8_t* b = r0 + tx.i1 * 3;
        const std::uint8_t* c = r1 + tx.i0 * 3; const std::uint8_t* e = r1 + tx.i1 * 3;
        for (int k = 0; k < 3; ++k) {
          const float v = wy0 * (wx0 * a[k] + wx1 * b[k]) + wy1 * (wx0 * c[k] + wx1 * e[k]);
          out[k * plane + ox] = v * scale[k] + bias[k];
        }
      }
    } else {
      std::uint8_t* out = static_cast<std::uint8_t*>(dst) + static_cast<std::size_t>(oy) * size * 3;
      for (int ox = 0; ox < size; ++ox) {
        const Tap& tx = xt[static_cast<std::size_t>(ox)];
        const float wx1 = tx.w1, wx0 = 1.f - tx.w1;
        const std::uint8_t* a = r0 + tx.i0 * 3; const std::uint8_t* b = r0 + tx.i1 * 3;
        const std::uint8_t* c = r1 + tx.i0 * 3; const std::uint8_t* e = r1 + tx.i1 * 3;
        for (int k = 0; k < 3; ++k) {
          const float v = wy0 * (wx0 * a[k] + wx1 * b[k]) + wy1 * (wx0 * c[k] + wx1 * e[k]);
          out[ox * 3 + k] = static_cast<std::uint8_t>(v + 0.5f);
        }
      }
    }
  }
}

}  // namespace stalldx::pipeline
