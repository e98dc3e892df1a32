#include "sample_loader.h"

#include <cstring>
#include <random>
#include <vector>

#include "jpeg_decoder.h"
#include "sampler.h"
#include "stalldx/profiler.h"
#include "transform.h"

namespace stalldx::pipeline {

namespace {
constexpr int kMaxSubstitutes = 8;
thread_local std::vector<std::uint8_t> tls_file;
JpegDecoder& decoder() {
  // One per worker thread for the process lifetime (TBB workers are long-lived).
  thread_local JpegDecoder d;
  return d;
}
}  // namespace

SampleLoader::Outcome SampleLoader::try_load(const SampleTask& t, std::uint32_t idx, bool slow) const {
  const SampleEntry& e = index_.samples[idx];
  const RangeIds ids{-1, t.batch, t.sample};
  {
    STALLDX_RANGE_VAR(range, retrieval, "read_file", ids);
    Status st = storage_.read(e.path, tls_file, slow ? config_.spike_ms : 0.0);
    range.set_bytes(tls_file.size());
    if (st.code() == Status::Code::unavailable) return Outcome::cancelled;  // the run is stopping, not a bad file
    if (!st.is_ok()) {
      bad_.add(BadKind::read, e.path, st.message());
      return Outcome::bad;
    }
  }
  STALLDX_RANGE(decode, "decode_transform", ids);
  JpegDecoder& dec = decoder();
  JpegHeader h;
  Status st = dec.read_header(tls_file.data(), tls_file.size(), h);
  if (!st.is_ok()) {
    bad_.add(dec.problem(), e.path, st.message());
    return Outcome::bad;
  }
  // Augmentation randomness depends only on (seed, stream position): the same batch whatever the schedule.
  std::mt19937_64 rng(mix64(config_.seed ^ 0xA5A5A5A5ull, static_cast<std::uint64_t>(t.sample)));
  const CropBox box = config_.transform == TransformKind::train ? random_resized_crop(h.width, h.height, rng)
                                                                : center_crop_box(h.width, h.height, config_.size);
  const int denom = choose_dct_denominator(box, config_.size, config_.dct_scaling);
  DecodedRegion region;
  st = dec.decode(box, denom, config_.roi_decode, region);
  if (!st.is_ok()) {
    bad_.add(dec.problem(), e.path, st.message());
    return Outcome::bad;
  }
  resample_into(region, box, config_.size, config_.output, t.dst);
  return Outcome::ok;
}

std::uint32_t SampleLoader::load(const SampleTask& t, bool& failed) const {
  const auto n = static_cast<std::uint32_t>(index_.samples.size());
  for (int k = 0; k <= kMaxSubstitutes && k < static_cast<int>(n); ++k) {
    const std::uint32_t idx = (t.index + static_cast<std::uint32_t>(k)) % n;
    const Outcome o = try_load(t, idx, t.slow && k == 0);
    if (o == Outcome::ok) {
      if (k > 0) bad_.add_substituted();
      return idx;
    }
    if (o == Outcome::cancelled) {
      std::memset(t.dst, 0, sample_bytes(config_));
      return UINT32_MAX;
    }
    if (config_.on_bad_sample == BadSamplePolicy::fail) {
      failed = true;
      break;
    }
  }
  std::memset(t.dst, 0, sample_bytes(config_));
  bad_.add_unfilled();
  return UINT32_MAX;
}

}  // namespace stalldx::pipeline
