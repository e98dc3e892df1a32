// libFuzzer target: arbitrary bytes through the retrieval+decode path (header, region-of-interest and
// DCT-scaled decode, resample into a slot). Nothing may crash, hang or read out of bounds.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "jpeg_decoder.h"
#include "transform.h"

using namespace stalldx::pipeline;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static JpegDecoder decoder;
  JpegHeader h;
  if (!decoder.read_header(data, size, h).is_ok()) return 0;
  std::mt19937_64 rng(size);
  const CropBox box = (size & 1) ? random_resized_crop(h.width, h.height, rng) : center_crop_box(h.width, h.height, 64);
  const int denom = choose_dct_denominator(box, 64, true);
  DecodedRegion region;
  if (!decoder.decode(box, denom, (size & 2) != 0, region).is_ok()) return 0;
  static std::vector<float> out(64 * 64 * 3);
  resample_into(region, box, 64, OutputFormat::float32_nchw, out.data());
  return 0;
}
