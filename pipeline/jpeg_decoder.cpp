#include "jpeg_decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>

#include <jpeglib.h>

namespace stalldx::pipeline {

// The decompressor and its error manager. libjpeg reports fatal errors by longjmp to `jump`; every
// C++ object touched between setjmp and a possible longjmp lives here, so no destructor is skipped.
struct JpegDecoder::Impl {
  jpeg_decompress_struct cinfo{};
  struct Err {
    jpeg_error_mgr mgr;
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    int warnings;
  } err{};
  std::vector<std::uint8_t> pixels;
  bool header_ok = false;

  static void on_error(j_common_ptr c) {
    auto* e = reinterpret_cast<Err*>(c->err);
    (*c->err->format_message)(c, e->message);
    std::longjmp(e->jump, 1);
  }
  static void on_message(j_common_ptr c, int level) {
    auto* e = reinterpret_cast<Err*>(c->err);
    if (level < 0 && e->warnings++ == 0) (*c->err->format_message)(c, e->message);  // keep the first warning
  }
};

JpegDecoder::JpegDecoder() : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.cinfo.err = jpeg_std_error(&d.err.mgr);
  d.err.mgr.error_exit = &Impl::on_error;
  d.err.mgr.emit_message = &Impl::on_message;
  jpeg_create_decompress(&d.cinfo);
}

JpegDecoder::~JpegDecoder() { jpeg_destroy_decompress(&impl_->cinfo); }

Status JpegDecoder::read_header(const std::uint8_t* data, std::size_t size, JpegHeader& h) {
  Impl& d = *impl_;
  d.header_ok = false;
  problem_ = BadKind::not_jpeg;
  if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) return Status::parse("not a JPEG file (no SOI marker)");
  // A whole JPEG ends with EOI (FF D9), possibly followed by a little padding. Inside entropy-coded data
  // 0xFF is always followed by 0x00 or a restart marker, so FF D9 near the end means the end was written.
  problem_ = BadKind::truncated;
  {
    const std::size_t tail = std::min<std::size_t>(size - 2, 4096);
    bool eoi = false;
    for (std::size_t i = size - 2; !eoi && i + tail >= size - 2 && i >= 2; --i) eoi = data[i] == 0xFF && data[i + 1] == 0xD9;
    if (!eoi) return Status::parse("truncated JPEG: no end-of-image marker in its last 4 KB");
  }
  problem_ = BadKind::corrupt;
  d.err.warnings = 0;
  d.err.message[0] = 0;
  if (setjmp(d.err.jump)) {
    jpeg_abort_decompress(&d.cinfo);
    return Status::parse(fmt::format("corrupt JPEG header: {}", d.err.message));
  }
  jpeg_mem_src(&d.cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&d.cinfo, TRUE);
  h.width = static_cast<int>(d.cinfo.image_width);
  h.height = static_cast<int>(d.cinfo.image_height);
  h.progressive = d.cinfo.progressive_mode != 0;
  h.grayscale = d.cinfo.jpeg_color_space == JCS_GRAYSCALE;
  const JpegLimits lim;
  if (h.width <= 0 || h.height <= 0 || h.width > lim.max_side || h.height > lim.max_side ||
      static_cast<std::uint64_t>(h.width) * h.height > lim.max_pixels) {
    jpeg_abort_decompress(&d.cinfo);
    problem_ = BadKind::too_large;
    return Status::parse(fmt::format("refused: declared size {}x{} is over the {}-pixel side / {} MP limit (decompression bomb?)",
                                     h.width, h.height, lim.max_side, lim.max_pixels >> 20));
  }
  if (d.cinfo.jpeg_color_space == JCS_CMYK || d.cinfo.jpeg_color_space == JCS_YCCK) {
    jpeg_abort_decompress(&d.cinfo);
    problem_ = BadKind::unsupported;
    return Status::parse("unsupported colour space: CMYK/YCCK JPEG");
  }
  d.header_ok = true;
  return Status::ok();
}

Status JpegDecoder::decode(const CropBox& box, int denom, bool roi, DecodedRegion& region) {
  Impl& d = *impl_;
  problem_ = BadKind::corrupt;
  if (!d.header_ok) return Status::internal("decode() without a successful read_header()");
  d.header_ok = false;
  jpeg_decompress_struct& c = d.cinfo;
  if (setjmp(d.err.jump)) {
    jpeg_abort_decompress(&c);
    return Status::parse(fmt::format("corrupt JPEG data: {}", d.err.message));
  }
  c.out_color_space = JCS_RGB;
  c.scale_num = 1;
  c.scale_denom = static_cast<unsigned>(denom);
  c.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&c);
  const int ow = static_cast<int>(c.output_width), oh = static_cast<int>(c.output_height);
  // Crop box in scaled coordinates, widened to whole pixels (+1 for the bilinear neighbour).
  int x0 = 0, x1 = ow, y0 = 0, y1 = oh;
  if (roi) {
    x0 = std::clamp(box.x / denom - 1, 0, ow - 1);
    x1 = std::clamp((box.x + box.w + denom - 1) / denom + 1, x0 + 1, ow);
    y0 = std::clamp(box.y / denom - 1, 0, oh - 1);
    y1 = std::clamp((box.y + box.h + denom - 1) / denom + 1, y0 + 1, oh);
  }
  JDIMENSION xoff = static_cast<JDIMENSION>(x0), width = static_cast<JDIMENSION>(x1 - x0);
  if (roi && (x0 > 0 || x1 < ow)) jpeg_crop_scanline(&c, &xoff, &width);  // widens to iMCU boundaries
  const int out_w = static_cast<int>(c.output_width);  // after crop_scanline: the cropped width
  const std::size_t stride = static_cast<std::size_t>(out_w) * 3;
  const int nrows = y1 - y0;
  d.pixels.resize(stride * static_cast<std::size_t>(nrows));
  if (y0 > 0) jpeg_skip_scanlines(&c, static_cast<JDIMENSION>(y0));
  while (static_cast<int>(c.output_scanline) < y1) {
    JSAMPROW row = d.pixels.data() + stride * (c.output_scanline - static_cast<JDIMENSION>(y0));
    if (jpeg_read_scanlines(&c, &row, 1) != 1) break;
    if (d.err.warnings > 0) break;
  }
  const bool complete = static_cast<int>(c.output_scanline) >= y1;
  // Rows below the crop are never decoded: abort instead of finishing.
  jpeg_abort_decompress(&c);
  if (d.err.warnings > 0) return Status::parse(fmt::format("corrupt JPEG data: {}", d.err.message));
  if (!complete) {
    problem_ = BadKind::truncated;
    return Status::parse("truncated JPEG data");
  }
  region.rgb = d.pixels.data();
  region.width = out_w;
  region.height = nrows;
  region.stride = static_cast<int>(stride);
  region.origin_x = static_cast<int>(xoff);
  region.origin_y = y0;
  region.denom = denom;
  return Status::ok();
}

}  // namespace stalldx::pipeline
