// Index, sampler and transform geometry, and an end-to-end CPU run.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <set>

#include "dataset_index.h"
#include "stalldx/pipeline/runner.h"
#include "sampler.h"
#include "stalldx/trace_io.h"
#include "test_dataset.h"
#include "transform.h"

namespace stalldx::pipeline {
namespace {

TEST(Index, TreeAndManifestAgreeAndAreSorted) {
  DatasetIndex a;
  ASSERT_TRUE(load_index(stalldx::testing::small_dataset(), a).is_ok());
  EXPECT_EQ(a.samples.size(), 96u);
  EXPECT_EQ(a.classes.size(), 4u);
  // Without the manifest: the ImageFolder walk gives the same samples and labels.
  const std::string copy = stalldx::testing::temp_dir("tree");
  std::filesystem::copy(stalldx::testing::small_dataset(), copy, std::filesystem::copy_options::recursive);
  std::filesystem::remove(std::filesystem::path(copy) / "manifest.tsv");
  DatasetIndex b;
  ASSERT_TRUE(load_index(copy, b).is_ok());
  ASSERT_EQ(b.samples.size(), a.samples.size());
  for (std::size_t i = 0; i < a.samples.size(); ++i) {
    EXPECT_EQ(std::filesystem::path(a.samples[i].path).filename(), std::filesystem::path(b.samples[i].path).filename());
    EXPECT_EQ(a.samples[i].label, b.samples[i].label);
  }
}

TEST(Index, MissingOrEmptyDatasetIsInvalid) {
  DatasetIndex x;
  EXPECT_EQ(load_index("/nonexistent/stalldx", x).code(), Status::Code::invalid_argument);
  EXPECT_EQ(load_index(stalldx::testing::temp_dir("empty"), x).code(), Status::Code::invalid_argument);
}

TEST(Sampler, DeterministicPermutationPerEpoch) {
  ShuffleSampler a(1000, 42), b(1000, 42), c(1000, 43);
  std::vector<std::uint32_t> x, y, z;
  for (int i = 0; i < 20; ++i) {
    a.next_batch(128, x);
    b.next_batch(128, y);
    c.next_batch(128, z);
    EXPECT_EQ(x, y);
  }
  EXPECT_NE(x, z);
  ShuffleSampler p(1000, 42);
  const auto e0 = p.permutation(0);
  const auto e1 = p.permutation(1);
  EXPECT_NE(e0, e1);
  EXPECT_EQ(std::set<std::uint32_t>(e0.begin(), e0.end()).size(), 1000u);  // a permutation
}

TEST(Sampler, RanksDrawDisjointShardsThatCoverEverySampleOncePerEpoch) {
  // DistributedSampler semantics: 10 samples over 3 ranks = 4 each (12: two padded from the start).
  const int world = 3;
  std::vector<std::vector<std::uint32_t>> epoch0(world), epoch1(world);
  for (int r = 0; r < world; ++r) {
    ShuffleSampler s(10, 42, true, r, world);
    ASSERT_EQ(s.shard_size(), 4u);
    s.next_batch(4, epoch0[static_cast<std::size_t>(r)]);
    s.next_batch(4, epoch1[static_cast<std::size_t>(r)]);
  }
  std::multiset<std::uint32_t> all;
  for (const auto& e : epoch0) all.insert(e.begin(), e.end());
  EXPECT_EQ(std::set<std::uint32_t>(all.begin(), all.end()).size(), 10u) << "every sample in the epoch";
  EXPECT_EQ(all.size(), 12u);
  // The permutation is the same on every rank and rank r takes its positions r, r + 3, ...
  ShuffleSampler whole(10, 42);
  const auto p0 = whole.permutation(0);
  for (int r = 0; r < world; ++r)
    for (int i = 0; i < 4; ++i) EXPECT_EQ(epoch0[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)], p0[static_cast<std::size_t>(r + 3 * i) % 10]);
  EXPECT_NE(epoch0, epoch1) << "each epoch reshuffled";
}

TEST(Transform, RandomResizedCropStaysInsideWithinScaleAndRatio) {
  std::mt19937_64 rng(5);
  int flips = 0;
  for (int i = 0; i < 2000; ++i) {
    const int W = 256 + static_cast<int>(rng() % 257), H = 256 + static_cast<int>(rng() % 257);
    const CropBox b = random_resized_crop(W, H, rng);
    ASSERT_GE(b.x, 0);
    ASSERT_GE(b.y, 0);
    ASSERT_LE(b.x + b.w, W);
    ASSERT_LE(b.y + b.h, H);
    const double area = static_cast<double>(b.w) * b.h / (static_cast<double>(W) * H);
    EXPECT_GE(area, 0.07);
    EXPECT_LE(area, 1.0);
    const double ratio = static_cast<double>(b.w) / b.h;
    EXPECT_GE(ratio, 0.74);
    EXPECT_LE(ratio, 1.35);
    flips += b.flip;
  }
  EXPECT_GT(flips, 850);
  EXPECT_LT(flips, 1150);
}

TEST(Transform, CenterCropIsCenteredSquare) {
  const CropBox b = center_crop_box(512, 384, 224);
  EXPECT_EQ(b.w, 336);
  EXPECT_EQ(b.h, 336);
  EXPECT_EQ(b.x, (512 - 336) / 2);
  EXPECT_EQ(b.y, (384 - 336) / 2);
  EXPECT_FALSE(b.flip);
}

TEST(Transform, ScaledDecodeOnlyWhenSourceIsAtLeastTwiceTheTarget) {
  EXPECT_EQ(choose_dct_denominator({0, 0, 447, 500}, 224, true), 1);
  EXPECT_EQ(choose_dct_denominator({0, 0, 448, 448}, 224, true), 2);
  EXPECT_EQ(choose_dct_denominator({0, 0, 900, 1000}, 224, true), 4);
  EXPECT_EQ(choose_dct_denominator({0, 0, 1792, 1800}, 224, true), 8);
  EXPECT_EQ(choose_dct_denominator({0, 0, 1792, 1800}, 224, false), 1);
}

TEST(Transform, FlipMirrorsTheOutput) {
  // A horizontal ramp: flipped output must be the mirror of the unflipped one.
  std::vector<std::uint8_t> rgb(64 * 32 * 3);
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 64; ++x)
      for (int k = 0; k < 3; ++k) rgb[(y * 64 + x) * 3 + k] = static_cast<std::uint8_t>(x * 4);
  DecodedRegion r{rgb.data(), 64, 32, 64 * 3, 0, 0, 1};
  std::vector<std::uint8_t> a(16 * 16 * 3), b(16 * 16 * 3);
  resample_into(r, {0, 0, 64, 32, false}, 16, OutputFormat::uint8_nhwc, a.data());
  resample_into(r, {0, 0, 64, 32, true}, 16, OutputFormat::uint8_nhwc, b.data());
  for (int x = 0; x < 16; ++x) EXPECT_EQ(a[x * 3], b[(15 - x) * 3]);
  EXPECT_LT(a[0], a[15 * 3]);
}

// The resampler against the filter's definition, computed the slow way: output pixel o of an axis is
// the centre start + (o + ½)·scale; every source pixel j weighs max(0, 1 − |j + ½ − centre| / max(scale, 1)),
// normalized over the region — antialiased bilinear, as torchvision's Resize(antialias=True) and PIL.
std::vector<double> reference_weights(int in, double start, double scale, int o) {
  const double centre = start + (o + 0.5) * scale, f = std::max(scale, 1.0);
  std::vector<double> w(static_cast<std::size_t>(in));
  double sum = 0;
  for (int j = 0; j < in; ++j) sum += w[static_cast<std::size_t>(j)] = std::max(0.0, 1.0 - std::abs((j + 0.5 - centre) / f));
  for (double& v : w) v /= sum;
  return w;
}

TEST(Transform, ResampleMatchesTheAntialiasedFilterDefinition) {
  std::mt19937 g(7);
  const int W = 97, H = 61;
  std::vector<std::uint8_t> rgb(W * H * 3);
  for (auto& v : rgb) v = static_cast<std::uint8_t>(g());
  // A region decoded at 1/2 scale whose pixel (0,0) is source (2·5, 2·3); boxes that downscale by
  // 1.3× and 3.4× (wider filter), upscale, and flip.
  const DecodedRegion r{rgb.data(), W, H, W * 3, 5, 3, 2};
  for (const CropBox box : {CropBox{11, 7, 130, 100, false}, CropBox{10, 6, 190, 115, true}, CropBox{40, 30, 20, 24, false}}) {
    const int size = 56;
    std::vector<float> out(3 * size * size);
    resample_into(r, box, size, OutputFormat::float32_nchw, out.data());
    const double sx = box.w / 2.0 / size, sy = box.h / 2.0 / size;
    double worst = 0;
    for (int oy = 0; oy < size; oy += 5)
      for (int ox = 0; ox < size; ox += 3) {
        const auto wy = reference_weights(H, box.y / 2.0 - 3, sy, oy);
        const auto wx = reference_weights(W, box.x / 2.0 - 5, sx, box.flip ? size - 1 - ox : ox);
        for (int c = 0; c < 3; ++c) {
          double v = 0;
          for (int y = 0; y < H; ++y)
            for (int x = 0; x < W; ++x) v += wy[static_cast<std::size_t>(y)] * wx[static_cast<std::size_t>(x)] * rgb[static_cast<std::size_t>((y * W + x) * 3 + c)];
          const double mean[3] = {0.485, 0.456, 0.406}, sd[3] = {0.229, 0.224, 0.225};
          const double expect = (v / 255.0 - mean[c]) / sd[c];
          worst = std::max(worst, std::abs(expect - out[static_cast<std::size_t>(c * size * size + oy * size + ox)]));
        }
      }
    EXPECT_LT(worst, 1e-4) << "box " << box.x << "," << box.y << " " << box.w << "x" << box.h;
  }
}

TEST(Transform, DownscalingStripesGivesGreyNotAliases) {
  // One-pixel black/white columns, shrunk 3×: plain bilinear sampling lands on single columns and keeps
  // the stripes at full contrast (0 / 255); the widened triangle covers six columns, leaving 113 / 142.
  const int W = 672, H = 8;
  std::vector<std::uint8_t> rgb(W * H * 3);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x)
      for (int c = 0; c < 3; ++c) rgb[static_cast<std::size_t>((y * W + x) * 3 + c)] = x % 2 ? 255 : 0;
  const DecodedRegion r{rgb.data(), W, H, W * 3, 0, 0, 1};
  std::vector<std::uint8_t> out(224 * 224 * 3);
  resample_into(r, {0, 0, W, H, false}, 224, OutputFormat::uint8_nhwc, out.data());
  // Away from the edges (where the window is clipped) every pixel is mid-grey.
  for (int x = 2; x < 222; ++x) EXPECT_NEAR(out[static_cast<std::size_t>((100 * 224 + x) * 3)], 128, 16) << x;
}

TEST(Transform, AConstantImageStaysConstantAtAnyScale) {
  std::vector<std::uint8_t> rgb(300 * 200 * 3);
  for (std::size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<std::uint8_t>(i % 3 == 0 ? 200 : i % 3 == 1 ? 17 : 99);
  const DecodedRegion r{rgb.data(), 300, 200, 300 * 3, 0, 0, 1};
  for (const CropBox box : {CropBox{0, 0, 300, 200, false}, CropBox{13, 9, 31, 17, true}, CropBox{100, 50, 180, 149, false}}) {
    std::vector<std::uint8_t> out(64 * 64 * 3);
    resample_into(r, box, 64, OutputFormat::uint8_nhwc, out.data());
    for (std::size_t i = 0; i < out.size(); i += 3) {
      ASSERT_EQ(out[i], 200);
      ASSERT_EQ(out[i + 1], 17);
      ASSERT_EQ(out[i + 2], 99);
    }
  }
}

RunConfig small_run() {
  RunConfig c;
  c.data = stalldx::testing::small_dataset();
  c.device = DeviceKind::none;
  c.batch = 16;
  c.warmup = 1;
  c.steps = 5;
  c.workers = 2;
  c.step_ms = 1;
  return c;
}

TEST(EndToEnd, CpuRunCountsStepsTimesBatchAndWritesAHostOnlyTrace) {
  RunConfig c = small_run();
  RunResult r;
  const Status st = run_pipeline(c, r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(r.images, 5u * 16u);
  EXPECT_EQ(r.steps_completed, 6);
  EXPECT_EQ(r.step_ms.size(), 5u);
  EXPECT_TRUE(r.device.standin);
  EXPECT_EQ(r.bad.attempts, 0u);
  ASSERT_TRUE(r.has_trace);
  int steps = 0, waits = 0, reads = 0, decodes = 0, standin = 0, collates = 0;
  for (const HostRange& h : r.trace.ranges) {
    steps += h.role == Role::step;
    waits += h.role == Role::wait_batch;
    reads += h.role == Role::retrieval;
    decodes += h.role == Role::decode;
    collates += h.role == Role::collate;
  }
  EXPECT_GE(collates, 6);
  for (const DeviceActivity& a : r.trace.activities) standin += a.kind == ActivityKind::standin;
  EXPECT_EQ(steps, 6);
  EXPECT_EQ(waits, 6);
  EXPECT_GE(reads, 6 * 16);
  EXPECT_GE(decodes, 6 * 16);
  EXPECT_EQ(standin, 6);
  EXPECT_TRUE(r.trace.calls.empty());  // host-only
  const std::string path = stalldx::testing::temp_dir("e2e") + "/t.json";
  ASSERT_TRUE(write_trace_file(r.trace, path).is_ok());
  Trace back;
  ASSERT_TRUE(read_trace_file(path, back).is_ok());
  EXPECT_TRUE(back == r.trace);
}

TEST(EndToEnd, UnprofiledRunHasNoTrace) {
  RunConfig c = small_run();
  c.profile = false;
  RunResult r;
  ASSERT_TRUE(run_pipeline(c, r).is_ok());
  EXPECT_FALSE(r.has_trace);
  EXPECT_EQ(r.images, 80u);
}

TEST(EndToEnd, EverySettingProducesTheSameBatches) {
  // Worker count and prefetch change scheduling, never the data: checksums per batch must agree.
  std::vector<std::uint64_t> sums[2];
  for (int k = 0; k < 2; ++k) {
    RunConfig c = small_run();
    c.workers = k == 0 ? 1 : 3;
    c.prefetch = k == 0 ? 1 : 3;
    c.verify = true;
    RunResult r;
    ASSERT_TRUE(run_pipeline(c, r).is_ok());
    EXPECT_EQ(r.device.verified_batches, 6u);
    sums[k] = r.batch_checksums;
  }
  ASSERT_EQ(sums[0].size(), 6u);
  EXPECT_EQ(sums[0], sums[1]);
}

TEST(Validate, BadSizesAreInvalidArguments) {
  RunConfig c = small_run();
  c.workers = 0;
  EXPECT_EQ(validate(c).code(), Status::Code::invalid_argument);
  c = small_run();
  c.batch = -3;
  EXPECT_EQ(validate(c).code(), Status::Code::invalid_argument);
  c = small_run();
  c.prefetch = 0;
  EXPECT_EQ(validate(c).code(), Status::Code::invalid_argument);
  c = small_run();
  c.batch = 1000;  // larger than the 96-sample dataset
  RunResult r;
  EXPECT_EQ(run_pipeline(c, r).code(), Status::Code::invalid_argument);
}

}  // namespace
}  // namespace stalldx::pipeline
