// Region-of-interest JPEG decoder on libjpeg-turbo's libjpeg API: decodes only the MCU columns
// (jpeg_crop_scanline) and rows (jpeg_skip_scanlines) a crop needs, at a DCT scale of 1/d.
// One per thread (holds a reusable decompressor and output buffer); not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stalldx/pipeline/bad_samples.h"
#include "stalldx/status.h"
#include "transform.h"

namespace stalldx::pipeline {

struct JpegLimits {
  int max_side = 16384;                  // larger declared dimensions are refused (decompression bomb)
  std::uint64_t max_pixels = 64ull << 20;
};

struct JpegHeader {
  int width = 0, height = 0;
  bool progressive = false, grayscale = false;
};

class JpegDecoder {
 public:
  JpegDecoder();
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // Parses the header of `data` (kept referenced until decode returns). Rejects non-JPEG, CMYK/YCCK,
  // absurd dimensions and data without an end-of-image marker (truncated: bad whatever region is later
  // decoded) with a message saying which; problem() then says which, as a type.
  Status read_header(const std::uint8_t* data, std::size_t size, JpegHeader& header);
  // Decodes `box` (full-resolution coordinates) at scale 1/denom after read_header; `roi` = false
  // decodes the whole image (for comparison). The region stays valid until the next call.
  Status decode(const CropBox& box, int denom, bool roi, DecodedRegion& region);
  // What the last failed read_header/decode found.
  BadKind problem() const { return problem_; }

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  BadKind problem_ = BadKind::corrupt;
};

}  // namespace stalldx::pipeline
