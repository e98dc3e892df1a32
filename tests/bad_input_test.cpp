// Every kind of bad file: skipped (or fatal under --on-bad-sample fail), counted, named; the batch
// still full; no crash.
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <fmt/format.h>

#include <atomic>

#include <filesystem>
#include <fstream>
#include <map>

#include "stalldx/datasets/generator.h"
#include "dataset_index.h"
#include "jpeg_decoder.h"
#include "stalldx/pipeline/runner.h"
#include "storage.h"
#include "stalldx/datasets/synth_image.h"
#include "test_support.h"

namespace fs = std::filesystem;

namespace stalldx::pipeline {
namespace {

std::vector<std::uint8_t> good_jpeg(int pf = TJPF_RGB) {
  const datasets::ImageSpec spec{320, 240, 90};
  std::vector<std::uint8_t> rgb = datasets::synthesize_rgb(spec, 1, 1);
  std::vector<std::uint8_t> px = rgb;
  if (pf == TJPF_CMYK) {
    px.resize(320 * 240 * 4);
    for (int i = 0; i < 320 * 240; ++i)
      for (int k = 0; k < 4; ++k) px[i * 4 + k] = k < 3 ? 255 - rgb[i * 3 + k] : 0;
  }
  tjhandle tj = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long size = 0;
  EXPECT_EQ(tjCompress2(tj, px.data(), 320, 0, 240, pf, &out, &size, TJSAMP_420, 90, 0), 0);
  std::vector<std::uint8_t> v(out, out + size);
  tjFree(out);
  tjDestroy(tj);
  return v;
}

void put(const fs::path& p, const std::vector<std::uint8_t>& v) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size()));
}

// Declares 60000x60000 in the SOF0 marker of a valid JPEG: a decompression bomb's header.
std::vector<std::uint8_t> bomb() {
  auto v = good_jpeg();
  for (std::size_t i = 2; i + 9 < v.size(); ++i)
    if (v[i] == 0xFF && (v[i + 1] == 0xC0 || v[i + 1] == 0xC2)) {
      v[i + 5] = 0xEA; v[i + 6] = 0x60; v[i + 7] = 0xEA; v[i + 8] = 0x60;
      break;
    }
  return v;
}

TEST(BadInput, DecoderNamesEachKind) {
  JpegDecoder d;
  JpegHeader h;
  const auto good = good_jpeg();
  std::vector<std::uint8_t> truncated(good.begin(), good.begin() + static_cast<long>(good.size() / 3));
  const std::vector<std::uint8_t> garbage = {0xFF, 0xD8, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc};
  const std::vector<std::uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0};
  EXPECT_NE(d.read_header(png.data(), png.size(), h).message().find("not a JPEG"), std::string::npos);
  EXPECT_FALSE(d.read_header(garbage.data(), garbage.size(), h).is_ok());
  const auto cmyk = good_jpeg(TJPF_CMYK);
  EXPECT_NE(d.read_header(cmyk.data(), cmyk.size(), h).message().find("CMYK"), std::string::npos);
  const auto b = bomb();
  EXPECT_NE(d.read_header(b.data(), b.size(), h).message().find("bomb"), std::string::npos);
  // Truncated: refused at the header (no end-of-image marker), whatever region would be decoded.
  const Status st = d.read_header(truncated.data(), truncated.size(), h);
  EXPECT_FALSE(st.is_ok());
  EXPECT_EQ(d.problem(), BadKind::truncated);
  EXPECT_NE(st.message().find("truncated"), std::string::npos) << st.message();
  DecodedRegion r;
  // The decoder is reusable after every failure.
  ASSERT_TRUE(d.read_header(good.data(), good.size(), h).is_ok());
  EXPECT_TRUE(d.decode({0, 0, 320, 240}, 1, false, r).is_ok());
}

std::string bad_dataset() {
  const fs::path root = stalldx::testing::temp_dir("bad");
  fs::create_directories(root / "a");
  fs::create_directories(root / "b");
  const auto good = good_jpeg();
  for (int i = 0; i < 20; ++i) put(root / (i % 2 ? "a" : "b") / ("good_" + std::to_string(i) + ".jpg"), good);
  put(root / "a" / "zero.jpg", {});
  put(root / "a" / "truncated.jpg", std::vector<std::uint8_t>(good.begin(), good.begin() + static_cast<long>(good.size() / 3)));
  put(root / "a" / "garbage.jpg", {0xFF, 0xD8, 1, 2, 3, 4, 5, 6, 7, 8});
  put(root / "a" / "notjpeg.jpg", {'h', 'e', 'l', 'l', 'o'});
  put(root / "b" / "cmyk.jpg", good_jpeg(TJPF_CMYK));
  put(root / "b" / "bomb.jpg", bomb());
  fs::create_directory(root / "b" / "directory.jpg");   // unreadable as a file
  fs::create_symlink(root / "b" / "loop2.jpg", root / "b" / "loop1.jpg");  // symlink loop
  fs::create_symlink(root / "b" / "loop1.jpg", root / "b" / "loop2.jpg");
  fs::create_symlink(root / "b" / "missing.jpg", root / "b" / "dangling.jpg");
  return root.string();
}

TEST(BadInput, RunSkipsCountsAndStillFillsBatches) {
  RunConfig c;
  c.data = bad_dataset();
  c.device = DeviceKind::none;
  c.batch = 8;
  c.warmup = 0;
  c.steps = 12;  // > one epoch of 30 entries: every bad file is met
  c.workers = 2;
  c.step_ms = 0;
  c.max_bad_fraction = 1;  // this dataset is a third bad on purpose
  RunResult r;
  const Status st = run_pipeline(c, r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(r.images, 12u * 8u);
  EXPECT_GE(r.bad.attempts, 9u);  // zero, truncated, garbage, notjpeg, cmyk, bomb, directory, 2 loops, dangling (some twice)
  EXPECT_LE(r.bad.files, r.bad.attempts);
  EXPECT_GE(r.bad.files, 9u);
  EXPECT_GE(r.bad.substituted, 9u);  // images, not attempts: each bad draw was replaced once
  EXPECT_LE(r.bad.substituted, r.bad.attempts);
  EXPECT_EQ(r.bad.unfilled, 0u);
  EXPECT_GT(r.bad.by_kind["read"], 0u);
  EXPECT_GT(r.bad.by_kind["truncated"], 0u);
  EXPECT_GT(r.bad.by_kind["not_jpeg"], 0u);
  EXPECT_GT(r.bad.by_kind["unsupported"], 0u);
  EXPECT_GT(r.bad.by_kind["too_large"], 0u);
  EXPECT_FALSE(r.bad.first.empty());
  EXPECT_LE(r.bad.first.size(), BadSampleReport::kMaxNamed);
}

TEST(BadInput, TooManySubstitutedImagesFailTheRunWithBothFigures) {
  RunConfig c;
  c.data = bad_dataset();
  c.device = DeviceKind::none;
  c.batch = 8;
  c.warmup = 0;
  c.steps = 4;
  c.workers = 2;
  c.step_ms = 0;  // default --max-bad-fraction 0.1: a third of this dataset is bad
  RunResult r;
  const Status st = run_pipeline(c, r);
  EXPECT_EQ(st.code(), Status::Code::invalid_argument);
  EXPECT_NE(st.message().find("substituted"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("--max-bad-fraction"), std::string::npos) << st.message();
}

TEST(BadInput, OnlyBadFilesFailInsteadOfMeasuringZeroImages) {
  const fs::path root = stalldx::testing::temp_dir("allbad");
  fs::create_directories(root / "a");
  for (int i = 0; i < 16; ++i) stalldx::testing::write_file((root / "a" / fmt::format("{}.jpg", i)).string(), "not a jpeg at all");
  RunConfig c;
  c.data = root.string();
  c.device = DeviceKind::none;
  c.batch = 4;
  c.warmup = 0;
  c.steps = 2;
  c.workers = 1;
  c.step_ms = 0;
  RunResult r;
  const Status st = run_pipeline(c, r);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(r.bad.unfilled, r.bad.images());
  EXPECT_GE(r.bad.unfilled, 8u);
  EXPECT_EQ(r.bad.files, 16u);  // every file met, each counted once as a file
}

TEST(BadInput, FifoBehindAJpgLinkNeverBlocksARead) {
  const fs::path root = stalldx::testing::temp_dir("fifo");
  ASSERT_EQ(mkfifo((root / "pipe").c_str(), 0644), 0);
  fs::create_symlink(root / "pipe", root / "pipe.jpg");
  StorageReader storage(StorageKnobs{});
  std::vector<std::uint8_t> bytes;
  const Status st = storage.read((root / "pipe.jpg").string(), bytes);  // would block forever in a blocking open()
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("not a regular file"), std::string::npos) << st.message();
}

// Before: manifest entries like ../../../etc/passwd or /etc/hostname were read, and a device node named
// there was opened before being refused.
TEST(BadInput, DatasetEntriesAndLinksStayInTheirFolder) {
  const fs::path outside = stalldx::testing::temp_dir("outside");
  const std::vector<std::uint8_t> jpeg = good_jpeg();
  stalldx::testing::write_file((outside / "secret.jpg").string(), std::string(jpeg.begin(), jpeg.end()));
  const fs::path root = stalldx::testing::temp_dir("confined");
  fs::create_directories(root / "a");
  for (int i = 0; i < 4; ++i) stalldx::testing::write_file((root / "a" / fmt::format("{}.jpg", i)).string(), std::string(jpeg.begin(), jpeg.end()));
  fs::create_symlink(root / "a" / "0.jpg", root / "a" / "inside_link.jpg");  // stays inside: read
  fs::create_symlink(outside / "secret.jpg", root / "a" / "out_link.jpg");    // leads out: refused
  fs::create_directory_symlink(outside, root / "b");                         // a folder link out: refused too
  stalldx::testing::write_file((root / "manifest.tsv").string(),
                               "a/0.jpg\t0\na/1.jpg\t0\na/2.jpg\t0\na/3.jpg\t0\na/inside_link.jpg\t0\na/out_link.jpg\t0\nb/secret.jpg\t0\n" +
                                   fmt::format("../{}/secret.jpg\t0\n{}\t0\n/dev/zero\t0\n", outside.filename().string(),
                                               (outside / "secret.jpg").string()));
  DatasetIndex index;
  ASSERT_TRUE(load_index(root.string(), index).is_ok());
  EXPECT_EQ(index.outside_entries, 3u) << "'..', an absolute path and a device node by absolute path";
  ASSERT_EQ(index.samples.size(), 7u);
  StorageReader storage(StorageKnobs{0, 0, false, 64ull << 20, index.confine});
  int opened = 0, refused = 0;
  for (const SampleEntry& e : index.samples) {
    std::vector<std::uint8_t> bytes;
    const Status st = storage.read(e.path, bytes);
    if (st.is_ok()) ++opened;
    else if (st.message().find("outside the dataset folder") != std::string::npos) ++refused;
    else ADD_FAILURE() << st.message();
  }
  EXPECT_EQ(opened, 5);
  EXPECT_EQ(refused, 2);
  DatasetIndex open;  // --data-outside: as before
  ASSERT_TRUE(load_index(root.string(), open, true).is_ok());
  EXPECT_EQ(open.samples.size(), 10u);
  EXPECT_TRUE(open.confine.empty());
  // A run over it counts the refused links as bad samples and goes on.
  RunConfig c;
  c.data = root.string();
  c.device = DeviceKind::none;
  c.batch = 4;
  c.warmup = 0;
  c.steps = 6;
  c.workers = 1;
  c.step_ms = 0;
  c.max_bad_fraction = 1;
  RunResult r;
  ASSERT_TRUE(run_pipeline(c, r).is_ok());
  EXPECT_GT(r.bad.by_kind["read"], 0u);
}

TEST(BadInput, EmulatedStorageWaitsWakeOnCancel) {
  std::atomic<bool> cancel{true};  // raised before the read: the first slice sees it, no timing involved
  StorageReader slow(StorageKnobs{1e4, 0.1, false}, &cancel);
  std::vector<std::uint8_t> bytes;
  const std::string file = std::string(STALLDX_TEST_DATA) + "/bad_images/good.jpg";
  const Status st = slow.read(file, bytes);
  EXPECT_EQ(st.code(), Status::Code::unavailable) << st.message();
}

// With --cold-cache the storage knobs price only the reads that miss the page cache. A pending cancel
// makes any emulated wait return `unavailable`, so the outcome says whether the read was priced —
// no timing involved.
TEST(BadInput, ColdCachePricesOnlyPageCacheMisses) {
  const std::string good = std::string(STALLDX_TEST_DATA) + "/bad_images/good.jpg";
  std::atomic<bool> cancel{true};
  std::vector<std::uint8_t> bytes;
  struct statfs shm;
  if (statfs("/dev/shm", &shm) == 0 && shm.f_type == TMPFS_MAGIC) {
    const fs::path copy = fs::path("/dev/shm") / fmt::format("stalldx-cold-{}.jpg", getpid());
    fs::copy_file(good, copy, fs::copy_options::overwrite_existing);
    StorageReader tmpfs(StorageKnobs{1e4, 0, true}, &cancel);
    const Status st = tmpfs.read(copy.string(), bytes);
    fs::remove(copy);
    EXPECT_TRUE(st.is_ok()) << "tmpfs pages cannot be dropped: the read hits and is not priced: " << st.message();
    EXPECT_EQ(tmpfs.cache_misses(), 0u);
  }
  // A disk-backed file: dropped pages make the read a miss where the file system honours the drop.
  StorageReader disk(StorageKnobs{1e4, 0, true}, &cancel);
  const Status st = disk.read(good, bytes);
  EXPECT_EQ(st.code() == Status::Code::unavailable, disk.cache_misses() == 1) << st.message();
  // Without --cold-cache every read is priced and no miss is counted.
  StorageReader warm(StorageKnobs{1e4, 0, false}, &cancel);
  EXPECT_EQ(warm.read(good, bytes).code(), Status::Code::unavailable);
  EXPECT_EQ(warm.cache_misses(), 0u);
}

TEST(BadInput, TruncatedFileIsBadWhateverRegionIsDecoded) {
  std::vector<std::uint8_t> bytes;
  StorageReader storage(StorageKnobs{});
  ASSERT_TRUE(storage.read(std::string(STALLDX_TEST_DATA) + "/bad_images/good.jpg", bytes).is_ok());
  bytes.resize(bytes.size() - 2);  // only the end-of-image marker missing
  JpegDecoder d;
  JpegHeader h;
  EXPECT_FALSE(d.read_header(bytes.data(), bytes.size(), h).is_ok());
  EXPECT_EQ(d.problem(), BadKind::truncated);
}

TEST(BadInput, FailPolicyStopsTheRunWithTheFileNamed) {
  RunConfig c;
  c.data = bad_dataset();
  c.device = DeviceKind::none;
  c.batch = 8;
  c.warmup = 0;
  c.steps = 12;
  c.workers = 2;
  c.step_ms = 0;
  c.on_bad_sample = BadSamplePolicy::fail;
  RunResult r;
  const Status st = run_pipeline(c, r);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("bad sample"), std::string::npos) << st.message();
}

TEST(BadInput, PlantedBadFilesFromTheGenerator) {
  const std::string root = stalldx::testing::temp_dir("planted");
  datasets::GeneratorOptions o;
  o.root = root;
  o.classes = 2;
  o.images_per_class = 20;
  o.bad_fraction = 0.1;
  datasets::GeneratorReport rep;
  ASSERT_TRUE(datasets::generate_dataset(o, rep).is_ok());
  EXPECT_EQ(rep.bad_planted, 4u);
  RunConfig c;
  c.data = root;
  c.device = DeviceKind::none;
  c.batch = 10;
  c.warmup = 0;
  c.steps = 4;
  c.workers = 2;
  c.step_ms = 0;
  c.transform = TransformKind::eval;
  c.output = OutputFormat::uint8_nhwc;
  c.max_bad_fraction = 0.2;  // 10% planted
  RunResult r;
  const Status st = run_pipeline(c, r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  // eval: one pass over 40 files meets each planted file once; the producer may start a prefetched
  // batch of the next pass before stopping.
  EXPECT_GE(r.bad.attempts, 4u);
  EXPECT_LE(r.bad.attempts, 6u);
}

}  // namespace
}  // namespace stalldx::pipeline

namespace stalldx::pipeline {
namespace {

// The committed corpus (tests/data/bad_images): each file's fate through retrieval + decode.
TEST(BadInputCorpus, EachFileIsDecodedOrRefusedWithItsKind) {
  const std::string dir = std::string(STALLDX_TEST_DATA) + "/bad_images";
  const std::map<std::string, std::string> expected = {
      {"good.jpg", "ok"},          {"progressive.jpg", "ok"},   {"grayscale.jpg", "ok"},
      {"cmyk.jpg", "unsupported"}, {"truncated.jpg", "truncated"}, {"zero_byte.jpg", "read"},
      {"garbage.jpg", "truncated"},   {"not_jpeg.jpg", "not_jpeg"},  {"huge_dimensions.jpg", "too_large"},
      {"unreadable_directory.jpg", "read"}, {"loop_a.jpg", "read"}, {"loop_b.jpg", "read"}, {"dangling.jpg", "read"}};
  StorageReader storage(StorageKnobs{});
  JpegDecoder decoder;
  for (const auto& [file, want] : expected) {
    std::vector<std::uint8_t> bytes;
    std::string got = "ok";
    Status st = storage.read(dir + "/" + file, bytes);
    JpegHeader h;
    if (!st.is_ok()) got = "read";
    else if (!(st = decoder.read_header(bytes.data(), bytes.size(), h)).is_ok())
      got = bad_kind_name(decoder.problem());
    else {
      DecodedRegion r;
      st = decoder.decode({0, 0, h.width, h.height}, 1, true, r);
      if (!st.is_ok()) got = bad_kind_name(decoder.problem());
    }
    EXPECT_EQ(got, want) << file << ": " << st.message();
    if (got != "ok") {
      EXPECT_FALSE(st.message().empty()) << file;
    }
  }
}

TEST(BadInputCorpus, PipelineOverTheCorpusCountsEveryBadFile) {
  const fs::path root = stalldx::testing::temp_dir("corpus");
  fs::create_directories(root / "mixed");
  for (const auto& e : fs::directory_iterator(std::string(STALLDX_TEST_DATA) + "/bad_images"))
    fs::copy(e.path(), root / "mixed" / e.path().filename(), fs::copy_options::copy_symlinks | fs::copy_options::recursive);
  RunConfig c;
  c.data = root.string();
  c.device = DeviceKind::none;
  c.transform = TransformKind::eval;  // one pass in order: each bad file met once
  c.batch = 12;  // the 13 entries less the directory, which the index skips
  c.warmup = 0;
  c.steps = 1;
  c.prefetch = 1;
  c.workers = 2;
  c.step_ms = 0;
  c.max_bad_fraction = 1;
  RunResult r;
  const Status st = run_pipeline(c, r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(r.images, 12u);
  EXPECT_GE(r.bad.attempts, 9u);  // 9 bad files indexed; a prefetched second pass may meet a few again
  EXPECT_EQ(r.bad.unfilled, 0u);
}

}  // namespace
}  // namespace stalldx::pipeline
