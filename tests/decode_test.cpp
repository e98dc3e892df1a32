// The ROI / DCT-scaled decoder against TurboJPEG's full decode of generated images.
#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <cmath>
#include <vector>

#include "jpeg_decoder.h"
#include "stalldx/datasets/synth_image.h"

namespace stalldx::pipeline {
namespace {

std::vector<std::uint8_t> encode(const std::vector<std::uint8_t>& rgb, int w, int h, int quality, int flags = 0,
                                 int pf = TJPF_RGB, int subsamp = TJSAMP_420) {
  tjhandle tj = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long size = 0;
  EXPECT_EQ(tjCompress2(tj, rgb.data(), w, 0, h, pf, &out, &size, subsamp, quality, flags), 0) << tjGetErrorStr2(tj);
  std::vector<std::uint8_t> v(out, out + size);
  tjFree(out);
  tjDestroy(tj);
  return v;
}

std::vector<std::uint8_t> tj_decode(const std::vector<std::uint8_t>& jpeg, int w, int h) {
  tjhandle tj = tjInitDecompress();
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(w) * h * 3);
  EXPECT_EQ(tjDecompress2(tj, jpeg.data(), jpeg.size(), rgb.data(), w, 0, h, TJPF_RGB, 0), 0);
  tjDestroy(tj);
  return rgb;
}

struct Fixture {
  datasets::ImageSpec spec{512, 384, 90};
  std::vector<std::uint8_t> rgb = datasets::synthesize_rgb(spec, 3, 11);
  std::vector<std::uint8_t> jpeg = encode(rgb, 512, 384, 90);
};

TEST(Decode, FullDecodeMatchesTurboJpegAndKnownContent) {
  Fixture f;
  JpegDecoder d;
  JpegHeader h;
  ASSERT_TRUE(d.read_header(f.jpeg.data(), f.jpeg.size(), h).is_ok());
  EXPECT_EQ(h.width, 512);
  EXPECT_EQ(h.height, 384);
  DecodedRegion r;
  ASSERT_TRUE(d.decode({0, 0, 512, 384}, 1, false, r).is_ok());
  ASSERT_EQ(r.width, 512);
  ASSERT_EQ(r.height, 384);
  const auto ref = tj_decode(f.jpeg, 512, 384);
  double err_tj = 0, err_src = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    err_tj += std::abs(int(r.rgb[i]) - int(ref[i]));
    err_src += std::abs(int(r.rgb[i]) - int(f.rgb[i]));
  }
  EXPECT_LT(err_tj / ref.size(), 0.01);   // same library, same DCT: identical up to rounding
  EXPECT_LT(err_src / ref.size(), 4.0);   // q90 JPEG of the known content
}

TEST(Decode, RegionDecodeEqualsTheSameRegionOfAFullDecode) {
  Fixture f;
  JpegDecoder d;
  JpegHeader h;
  const CropBox box{131, 77, 250, 190, false};
  ASSERT_TRUE(d.read_header(f.jpeg.data(), f.jpeg.size(), h).is_ok());
  DecodedRegion roi;
  ASSERT_TRUE(d.decode(box, 1, true, roi).is_ok());
  EXPECT_LE(roi.origin_x, box.x);
  EXPECT_LE(roi.origin_y, box.y);
  EXPECT_GE(roi.origin_x + roi.width, box.x + box.w);
  EXPECT_GE(roi.origin_y + roi.height, box.y + box.h);
  EXPECT_LT(roi.width * roi.height, 512 * 384 / 2);  // really decoded less
  const std::vector<std::uint8_t> part(roi.rgb, roi.rgb + static_cast<std::size_t>(roi.stride) * roi.height);
  const int stride = roi.stride, ox = roi.origin_x, oy = roi.origin_y;
  const auto ref = tj_decode(f.jpeg, 512, 384);
  double err = 0;
  int n = 0;
  for (int y = box.y; y < box.y + box.h; ++y)
    for (int x = box.x; x < box.x + box.w; ++x)
      for (int k = 0; k < 3; ++k, ++n)
        err += std::abs(int(part[(y - oy) * stride + (x - ox) * 3 + k]) - int(ref[(y * 512 + x) * 3 + k]));
  EXPECT_LT(err / n, 0.5);
}

TEST(Decode, ScaledDecodeHalvesTheSizeAndKeepsTheContent) {
  Fixture f;
  JpegDecoder d;
  JpegHeader h;
  ASSERT_TRUE(d.read_header(f.jpeg.data(), f.jpeg.size(), h).is_ok());
  DecodedRegion r;
  ASSERT_TRUE(d.decode({0, 0, 512, 384}, 2, false, r).is_ok());
  EXPECT_EQ(r.width, 256);
  EXPECT_EQ(r.height, 192);
  double err = 0;
  for (int y = 0; y < 192; ++y)
    for (int x = 0; x < 256; ++x)
      for (int k = 0; k < 3; ++k) {
        const int avg = (f.rgb[((2 * y) * 512 + 2 * x) * 3 + k] + f.rgb[((2 * y) * 512 + 2 * x + 1) * 3 + k] +
                         f.rgb[((2 * y + 1) * 512 + 2 * x) * 3 + k] + f.rgb[((2 * y + 1) * 512 + 2 * x + 1) * 3 + k]) / 4;
        err += std::abs(int(r.rgb[y * r.stride + x * 3 + k]) - avg);
      }
  EXPECT_LT(err / (256.0 * 192 * 3), 6.0);
}

TEST(Decode, GrayscaleAndProgressiveDecode) {
  Fixture f;
  JpegDecoder d;
  for (int variant = 0; variant < 2; ++variant) {
    const auto jpeg = variant == 0 ? encode(f.rgb, 512, 384, 90, 0, TJPF_RGB, TJSAMP_GRAY)
                                   : encode(f.rgb, 512, 384, 90, TJFLAG_PROGRESSIVE);
    JpegHeader h;
    ASSERT_TRUE(d.read_header(jpeg.data(), jpeg.size(), h).is_ok());
    EXPECT_EQ(h.grayscale, variant == 0);
    EXPECT_EQ(h.progressive, variant == 1);
    DecodedRegion r;
    ASSERT_TRUE(d.decode({100, 50, 300, 300}, 1, true, r).is_ok()) << variant;
  }
}

TEST(Decode, GeneratedImagesLookLikeFood101) {
  // Natural-image-like statistics: 30–70 KB on average at 512 px, quality 85–95.
  std::uint64_t bytes = 0;
  for (int i = 0; i < 24; ++i) {
    const auto spec = datasets::pick_spec(99, i);
    EXPECT_EQ(std::max(spec.width, spec.height), 512);
    EXPECT_GE(spec.quality, 85);
    EXPECT_LE(spec.quality, 95);
    bytes += encode(datasets::synthesize_rgb(spec, 99, i), spec.width, spec.height, spec.quality).size();
  }
  const double kb = bytes / 24.0 / 1024.0;
  EXPECT_GT(kb, 25.0);
  EXPECT_LT(kb, 70.0);
}

TEST(Decode, DetailMakesFilesAsLargeAsFood101s) {
  // `stalldx dataset --detail 1.5`: the same images with more fine texture, ≥ 40 KB on average (Food-101's
  // own mean is about 50 KB), larger than the default detail's.
  std::uint64_t plain = 0, detailed = 0;
  for (int i = 0; i < 12; ++i) {
    auto spec = datasets::pick_spec(2026, i);
    plain += encode(datasets::synthesize_rgb(spec, 2026, i), spec.width, spec.height, spec.quality).size();
    spec.detail = 1.5f;
    detailed += encode(datasets::synthesize_rgb(spec, 2026, i), spec.width, spec.height, spec.quality).size();
  }
  EXPECT_GT(detailed, plain * 1.2);
  EXPECT_GE(detailed / 12.0 / 1024.0, 40.0);
}

}  // namespace
}  // namespace stalldx::pipeline
