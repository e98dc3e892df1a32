#include "stalldx/datasets/synth_image.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace stalldx::datasets {

namespace {
std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  std::uint64_t z = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Value-noise lattice of g x g cells, smoothly interpolated: one octave of fractal shading/texture.
struct Lattice {
  int gw, gh;
  std::vector<float> v;
  Lattice(int gw_, int gh_, std::mt19937_64& rng) : gw(gw_ + 2), gh(gh_ + 2), v(static_cast<std::size_t>(gw * gh)) {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (float& x : v) x = u(rng);
  }
  float at(float x, float y) const {  // x,y in lattice units
    const int x0 = static_cast<int>(x), y0 = static_cast<int>(y);
    const float fx = x - x0, fy = y - y0;
    const float sx = fx * fx * (3 - 2 * fx), sy = fy * fy * (3 - 2 * fy);
    const float* r0 = &v[static_cast<std::size_t>(y0 * gw + x0)];
    const float* r1 = r0 + gw;
    const float a = r0[0] + (r0[1] - r0[0]) * sx, b = r1[0] + (r1[1] - r1[0]) * sx;
    return a + (b - a) * sy;
  }
};
}  // namespace

ImageSpec pick_spec(std::uint64_t seed, std::uint64_t index) {
  std::mt19937_64 rng(mix(seed, index * 2 + 1));
  ImageSpec s;
  const double p = std::uniform_real_distribution<double>(0, 1)(rng);
  if (p < 0.60) { s.width = 512; s.height = 384; }
  else if (p < 0.80) { s.width = 384; s.height = 512; }
  else if (p < 0.92) { s.width = 512; s.height = 512; }
  else {  // smaller ones, longest side still 512 most of the time
    const int shorter = std::uniform_int_distribution<int>(256, 383)(rng);
    if (rng() & 1) { s.width = 512; s.height = shorter; } else { s.width = shorter; s.height = 512; }
  }
  s.quality = std::uniform_int_distribution<int>(85, 95)(rng);
  return s;
}

std::vector<std::uint8_t> synthesize_rgb(const ImageSpec& spec, std::uint64_t seed, std::uint64_t index) {
  const int w = spec.width, h = spec.height;
  std::mt19937_64 rng(mix(seed, index * 2));
  std::uniform_real_distribution<float> u01(0.f, 1.f);

  // Smooth shading: a few octaves of value noise (1/f amplitudes), per channel around a base colour.
  struct Octave { Lattice l; float cell, amp; };
  std::vector<Octave> shading;
  for (int o = 0; o < 5; ++o) {
    const float cell = 256.f / static_cast<float>(1 << o);  // 256, 128, 64, 32, 16 px
    shading.push_back({Lattice(static_cast<int>(w / cell) + 1, static_cast<int>(h / cell) + 1, rng), cell, 60.f / static_cast<float>(1 << o)});
  }
  // Fine texture (crumbs, grain): 8 and 4 px cells, modest amplitude, only inside objects.
  Lattice tex8(w / 8 + 1, h / 8 + 1, rng), tex4(w / 4 + 1, h / 4 + 1, rng);

  // Objects: soft-edged ellipses with their own colour (plates, food items).
  struct Blob { float cx, cy, rx, ry, cosr, sinr, r, g, b, texture; };
  std::vector<Blob> blobs;
  const int nblobs = 3 + static_cast<int>(rng() % 5);
  for (int i = 0; i < nblobs; ++i) {
    const float ang = u01(rng) * 3.14159f;
    blobs.push_back({u01(rng) * w, u01(rng) * h, (0.1f + 0.3f * u01(rng)) * w, (0.1f + 0.3f * u01(rng)) * h,
                     std::cos(ang), std::sin(ang), 40 + 200 * u01(rng), 30 + 180 * u01(rng), 20 + 160 * u01(rng),
                     6.f + 18.f * u01(rng)});
  }
  const float base[3] = {90 + 100 * u01(rng), 80 + 90 * u01(rng), 60 + 80 * u01(rng)};
  std::normal_distribution<float> noise(0.f, 2.2f * spec.detail);

  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      float shade = 0;
      for (const Octave& o : shading) shade += o.amp * o.l.at(x / o.cell, y / o.cell);
      float c[3] = {base[0] + shade, base[1] + shade * 0.9f, base[2] + shade * 0.8f};
      for (const Blob& b : blobs) {
        const float dx = x - b.cx, dy = y - b.cy;
        const float px = (dx * b.cosr + dy * b.sinr) / b.rx, py = (-dx * b.sinr + dy * b.cosr) / b.ry;
        const float d = std::sqrt(px * px + py * py);
        if (d >= 1.02f) continue;
        const float alpha = std::clamp((1.02f - d) / 0.04f, 0.f, 1.f);  // edge a few px wide
        const float t = spec.detail * b.texture * (tex8.at(x / 8.f, y / 8.f) + 0.6f * tex4.at(x / 4.f, y / 4.f));
        const float obj[3] = {b.r + t + 0.4f * shade, b.g + t * 0.9f + 0.4f * shade, b.b + t * 0.7f + 0.4f * shade};
        for (int k = 0; k < 3; ++k) c[k] += alpha * (obj[k] - c[k]);
      }
      const float n = noise(rng);
      std::uint8_t* px = &rgb[(static_cast<std::size_t>(y) * w + x) * 3];
      for (int k = 0; k < 3; ++k) px[k] = static_cast<std::uint8_t>(std::clamp(c[k] + n, 0.f, 255.f));
    }
  }
  return rgb;
}

}  // namespace stalldx::datasets
