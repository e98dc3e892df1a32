// The resampler (transform.h: resample_into): separable, vertical pass first.
//
//  1. Taps, per axis: output o covers source [start + o·scale, start + (o+1)·scale) in region pixels; its
//     weights are a triangle of half-width max(scale, 1) centred on the cover's centre, normalized over
//     the pixels inside the region (PIL's / torchvision's antialiased bilinear; for scale ≤ 1 it is
//     plain bilinear with align_corners=False). Horizontal taps have one padded width, so that pass is
//     branch-free; a flip reverses them.
//  2. Vertical pass, per output row: a weighted sum of the few source rows it covers, over only the
//     columns the horizontal taps read, into a float row of interleaved RGB: contiguous uint8→float
//     multiply-adds in SIMD (resample_rows.cpp, Highway).
//  3. Horizontal pass on that row: one 4-lane vector (R, G, B, unused) per tap, then normalize (float32
//     NCHW) or round (uint8 NHWC) straight into the batch slot.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "resample_rows.h"
#include "transform.h"

namespace stalldx::pipeline {

namespace {

// Taps of one axis: output o reads source indices first[o] .. first[o] + width - 1 with weights
// w[o·width ...] (trailing zeros where fewer pixels are covered). Every index is inside [0, in_size).
struct Taps {
  int width = 0;
  std::vector<int> first;
  std::vector<int> count;  // nonzero weights of output o (vertical pass: rows to sum)
  std::vector<float> w;
};

void make_taps(Taps& t, int n, double start, double extent, int in_size) {
  const double scale = extent / n;
  const double fscale = std::max(scale, 1.0);  // the filter widens when downscaling: antialias
  const double support = fscale;               // triangle of half-width 1, scaled
  // floor(a + 2·support) - floor(a) ≤ ceil(2·support): no output covers more pixels than this.
  t.width = std::min(in_size, std::max(2, static_cast<int>(std::ceil(2 * support - 1e-9))));
  t.first.assign(static_cast<std::size_t>(n), 0);
  t.count.assign(static_cast<std::size_t>(n), 0);
  t.w.assign(static_cast<std::size_t>(n) * t.width, 0.f);
  for (int o = 0; o < n; ++o) {
    const double centre = start + (o + 0.5) * scale;
    int lo = std::max(0, static_cast<int>(std::floor(centre - support + 0.5)));
    int hi = std::min(in_size, static_cast<int>(std::floor(centre + support + 0.5)));
    if (hi <= lo) {  // a box outside the region (clamped geometry): take the nearest edge pixel
      lo = std::clamp(static_cast<int>(std::floor(centre)), 0, in_size - 1);
      hi = lo + 1;
    }
    hi = std::min(hi, lo + t.width);
    const int count = hi - lo;
    const auto weight = [&](int j) { return std::max(0.0, 1.0 - std::abs((lo + j - centre + 0.5) / fscale)); };
    double sum = 0;
    for (int j = 0; j < count; ++j) sum += weight(j);
    // Keep the window inside the source: shift it left when it would run past the end.
    const int first = std::min(lo, in_size - t.width);
    const int shift = lo - first;
    float* dst = &t.w[static_cast<std::size_t>(o) * t.width];
    if (sum > 0)
      for (int j = 0; j < count; ++j) dst[shift + j] = static_cast<float>(weight(j) / sum);
    else
      dst[shift] = 1.f;  // no pixel under the triangle: the nearest one
    t.first[static_cast<std::size_t>(o)] = first;
    t.count[static_cast<std::size_t>(o)] = shift + count;
  }
}

void reverse_taps(Taps& t) {
  const int n = static_cast<int>(t.first.size());
  for (int a = 0, b = n - 1; a < b; ++a, --b) {
    std::swap(t.first[static_cast<std::size_t>(a)], t.first[static_cast<std::size_t>(b)]);
    std::swap(t.count[static_cast<std::size_t>(a)], t.count[static_cast<std::size_t>(b)]);
    std::swap_ranges(&t.w[static_cast<std::size_t>(a) * t.width], &t.w[static_cast<std::size_t>(a + 1) * t.width],
                     &t.w[static_cast<std::size_t>(b) * t.width]);
  }
}

typedef float v4f __attribute__((vector_size(16)));
typedef std::int32_t v4i __attribute__((vector_size(16)));

template <typename V, typename P>
inline V load(const P* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The horizontal pass of one output row: pixel ox is R, G, B (and an unused lane) of
// Σ_k w[ox·K + k] · row[(first[ox] + k)·3 ...], handed to `put(ox, v)`. K is the taps' width, a
// compile-time constant for the common widths so the tap loop unrolls.
template <int K, typename Put>
inline void horizontal_row(const float* row, const int* first, const float* w, int width, int size, Put put) {
  const int k_n = K > 0 ? K : width;
  for (int ox = 0; ox < size; ++ox) {
    const float* src = row + first[ox] * 3;
    const float* wo = w + static_cast<std::size_t>(ox) * k_n;
    v4f acc = wo[0] * load<v4f>(src);
    for (int k = 1; k < k_n; ++k) acc += wo[k] * load<v4f>(src + 3 * k);
    put(ox, acc);
  }
}

template <typename Put>
void horizontal_row_any(const float* row, const int* first, const float* w, int width, int size, Put put) {
  switch (width) {
    case 2: return horizontal_row<2>(row, first, w, width, size, put);
    case 3: return horizontal_row<3>(row, first, w, width, size, put);
    case 4: return horizontal_row<4>(row, first, w, width, size, put);
    case 5: return horizontal_row<5>(row, first, w, width, size, put);
    default: return horizontal_row<0>(row, first, w, width, size, put);
  }
}

constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};

}  // namespace

void resample_into(const DecodedRegion& r, const CropBox& box, int size, OutputFormat format, void* dst) {
  thread_local Taps xt, yt;
  thread_local std::vector<float> row;
  thread_local std::vector<const std::uint8_t*> rows;
  const double d = r.denom;
  make_taps(xt, size, box.x / d - r.origin_x, box.w / d, r.width);
  make_taps(yt, size, box.y / d - r.origin_y, box.h / d, r.height);
  if (box.flip) reverse_taps(xt);
  // Columns the horizontal taps read: the vertical pass computes only these.
  int x0 = r.width, x1 = 0;
  for (int o = 0; o < size; ++o) {
    x0 = std::min(x0, xt.first[static_cast<std::size_t>(o)]);
    x1 = std::max(x1, xt.first[static_cast<std::size_t>(o)] + xt.width);
  }
  const int n = (x1 - x0) * 3;
  if (row.size() < static_cast<std::size_t>(n) + 4) row.assign(static_cast<std::size_t>(n) + 4, 0.f);  // +4: the 4th lane's read
  if (rows.size() < static_cast<std::size_t>(yt.width)) rows.resize(static_cast<std::size_t>(yt.width));
  const std::size_t plane = static_cast<std::size_t>(size) * size;
  float scale[3], bias[3];
  for (int c = 0; c < 3; ++c) {
    scale[c] = 1.f / (255.f * kStd[c]);
    bias[c] = -kMean[c] / kStd[c];
  }
  for (int& f : xt.first) f -= x0;  // the horizontal pass reads the row from column x0
  for (int oy = 0; oy < size; ++oy) {
    const int first = yt.first[static_cast<std::size_t>(oy)];
    const int count = yt.count[static_cast<std::size_t>(oy)];
    for (int k = 0; k < count; ++k) rows[static_cast<std::size_t>(k)] = r.rgb + static_cast<std::size_t>(first + k) * r.stride + x0 * 3;
    weighted_rows(rows.data(), &yt.w[static_cast<std::size_t>(oy) * yt.width], count, n, row.data());
    if (format == OutputFormat::float32_nchw) {
      float* out = static_cast<float*>(dst) + static_cast<std::size_t>(oy) * size;
      horizontal_row_any(row.data(), xt.first.data(), xt.w.data(), xt.width, size, [&](int ox, v4f v) {
        out[ox] = v[0] * scale[0] + bias[0];
        out[plane + ox] = v[1] * scale[1] + bias[1];
        out[2 * plane + ox] = v[2] * scale[2] + bias[2];
      });
    } else {
      std::uint8_t* out = static_cast<std::uint8_t*>(dst) + static_cast<std::size_t>(oy) * size * 3;
      horizontal_row_any(row.data(), xt.first.data(), xt.w.data(), xt.width, size, [&](int ox, v4f v) {
        v4f c = v + 0.5f;
        c = c < 0.f ? 0.f : c;  // lane-wise clamp to [0, 255], then truncate: round to nearest
        c = c > 255.f ? 255.f : c;
        const v4i q = __builtin_convertvector(c, v4i);
        for (int k = 0; k < 3; ++k) out[ox * 3 + k] = static_cast<std::uint8_t>(q[k]);
      });
    }
  }
}

}  // namespace stalldx::pipeline
