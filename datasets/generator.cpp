#include "stalldx/datasets/generator.h"

#include <fmt/format.h>
#include <unistd.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <turbojpeg.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <vector>

#include "stalldx/datasets/synth_image.h"
#include "stalldx/output_file.h"

namespace fs = std::filesystem;

namespace stalldx::datasets {

namespace {

enum class Planted { ok, truncated, zero_byte, garbage, not_jpeg };
const char* planted_name(Planted p) {
  switch (p) {
    case Planted::ok: return "ok";
    case Planted::truncated: return "truncated";
    case Planted::zero_byte: return "zero_byte";
    case Planted::garbage: return "garbage";
    case Planted::not_jpeg: return "not_jpeg";
  }
  return "?";
}

// Deterministic choice of which images are bad: every k-th image where k = round(1/fraction).
Planted planted_kind(std::uint64_t index, double fraction) {
  if (fraction <= 0) return Planted::ok;
  const auto every = static_cast<std::uint64_t>(std::max(1.0, std::round(1.0 / fraction)));
  if (index % every != every / 2) return Planted::ok;
  return static_cast<Planted>(1 + (index / every) % 4);
}

struct Entry {
  std::string rel;
  int label = 0;
  std::uint64_t bytes = 0;
  int width = 0, height = 0;
  Planted kind = Planted::ok;
};

// Through a temporary name: an image file that exists is whole (what --resume relies on).
Status write_file(const fs::path& p, const unsigned char* data, std::size_t n) {
  std::string tmp_name;
  const int fd = create_temp_beside(p.string(), tmp_name);  // exclusive: a link planted there is never followed
  if (fd < 0) return Status::io(fmt::format("cannot create a temporary file beside '{}': {}", p.string(), std::strerror(errno)));
  ::close(fd);
  const fs::path tmp = tmp_name;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n));
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return Status::io(fmt::format("cannot write '{}' (disk full?)", p.string()));
    }
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) return Status::io(fmt::format("cannot move '{}' into place: {}", p.string(), ec.message()));
  return Status::ok();
}

std::string options_text(const GeneratorOptions& o) {
  return fmt::format("classes={} per_class={} seed={} bad_fraction={}\n", o.classes, o.images_per_class, o.seed, o.bad_fraction);
}

std::string read_whole(const fs::path& p, bool& ok) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  ok = static_cast<bool>(in);
  return ss.str();
}

// The options checked and the root made ready: a folder with anything in it is somebody's, so only an
// unfinished generation with these very options is taken up again (as --resume); anything else needs
// --force, which writes over same-named files. Leaves the incomplete marker (holding the options) and
// the class folders.
Status prepare_root(const GeneratorOptions& o) {
  if (o.root.empty()) return Status::invalid("dataset root must not be empty");
  if (o.classes <= 0 || o.images_per_class <= 0)
    return Status::invalid(fmt::format("classes ({}) and images per class ({}) must be > 0", o.classes, o.images_per_class));
  if (o.bad_fraction < 0 || o.bad_fraction > 1) return Status::invalid("bad fraction must be in [0, 1]");
  std::error_code ec;
  const fs::path marker = fs::path(o.root) / kIncompleteMarker;
  const std::string opts = options_text(o);
  bool marked = false;
  if (!o.resume && !o.force && fs::is_directory(o.root, ec) && !fs::is_empty(o.root, ec) && read_whole(marker, marked) != opts)
    return Status::invalid(fmt::format("'{}' is not empty{}: choose an empty or new folder, or --force to write over it "
                                       "(same-named files and manifest.tsv are replaced)",
                                       o.root, marked ? " (an unfinished generation with other options)" : ""));
  fs::create_directories(o.root, ec);
  if (ec) return Status::io(fmt::format("cannot create '{}': {}", o.root, ec.message()));
  if (o.resume) {
    const std::string was = read_whole(marker, marked);
    if (!marked) return Status::invalid(fmt::format("--resume: '{}' has no unfinished generation to resume ({} missing)", o.root, kIncompleteMarker));
    if (was != opts)
      return Status::invalid(fmt::format("--resume with other options than the interrupted generation of '{}' ({}): {}", o.root,
                                         kIncompleteMarker, was));
  } else if (Status st = write_file_atomic(marker.string(), opts); !st.is_ok()) {
    return st;
  }
  for (int c = 0; c < o.classes; ++c) {
    fs::create_directories(fs::path(o.root) / fmt::format("class_{:03}", c), ec);
    if (ec) return Status::io(fmt::format("cannot create class folder in '{}': {}", o.root, ec.message()));
  }
  return Status::ok();
}

// The bytes of image `i` as planted: random bytes for garbage / not a JPEG (a PNG signature), a
// compressed synthetic image (cut to 40 % when truncated), nothing when zero-byte. Sets e's size.
Status image_bytes(const GeneratorOptions& o, std::uint64_t i, const ImageSpec& spec, Entry& e, std::vector<std::uint8_t>& data) {
  if (e.kind == Planted::zero_byte) return Status::ok();
  if (e.kind == Planted::garbage || e.kind == Planted::not_jpeg) {
    std::mt19937_64 rng(o.seed * 31 + i);
    data.resize(4096 + rng() % 8192);
    for (auto& b : data) b = static_cast<std::uint8_t>(rng());
    if (e.kind == Planted::not_jpeg) {  // a PNG signature: a real file, just not a JPEG
      const unsigned char png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
      std::copy(png, png + 8, data.begin());
    } else {
      data[0] = 0xFF; data[1] = 0xD8;  // garbage that starts like a JPEG
    }
    return Status::ok();
  }
  const std::vector<std::uint8_t> rgb = synthesize_rgb(spec, o.seed, i);
  tjhandle tj = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(tj, rgb.data(), spec.width, 0, spec.height, TJPF_RGB, &jpeg, &size, TJSAMP_420, spec.quality, TJFLAG_ACCURATEDCT);
  Status st = Status::ok();
  if (rc == 0) {
    data.assign(jpeg, jpeg + size);
    if (e.kind == Planted::truncated) data.resize(size * 2 / 5);
    e.width = spec.width;
    e.height = spec.height;
  } else {
    st = Status::internal(tjGetErrorStr2(tj));
  }
  tjFree(jpeg);
  tjDestroy(tj);
  return st;
}

enum class Made { written, resumed, stopped };

// Image `i`: its entry filled, its file written (or found whole, resuming; or left, stopped).
Status make_image(const GeneratorOptions& o, std::uint64_t i, Entry& e, Made& made) {
  e.label = static_cast<int>(i / o.images_per_class);
  e.rel = fmt::format("class_{:03}/img_{:06}.jpg", e.label, i);
  e.kind = planted_kind(i, o.bad_fraction);
  ImageSpec spec = pick_spec(o.seed, i);
  spec.detail = o.detail;
  made = Made::written;
  if (o.stop != nullptr && o.stop->stopped()) {
    made = Made::stopped;
    return Status::ok();
  }
  std::error_code fe;
  const fs::path path = fs::path(o.root) / e.rel;
  if (o.resume && fs::is_regular_file(path, fe)) {  // whole by construction (renamed into place)
    e.bytes = fs::file_size(path, fe);
    if (e.kind == Planted::ok || e.kind == Planted::truncated) {
      e.width = spec.width;
      e.height = spec.height;
    }
    made = Made::resumed;
    return Status::ok();
  }
  std::vector<std::uint8_t> data;
  Status st = image_bytes(o, i, spec, e, data);
  e.bytes = data.size();
  if (st.is_ok()) st = write_file(path, data.data(), data.size());
  return st;
}

// root/manifest.tsv, every entry in index order, and the report's totals.
Status write_manifest(const GeneratorOptions& o, const std::vector<Entry>& entries, GeneratorReport& report) {
  std::string manifest = "# path\tlabel\tbytes\twidth\theight\tkind\n";
  for (const Entry& e : entries) {
    manifest += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\n", e.rel, e.label, e.bytes, e.width, e.height, planted_name(e.kind));
    report.images++;
    report.total_bytes += e.bytes;
    if (e.kind != Planted::ok) report.bad_planted++;
  }
  return write_file_atomic((fs::path(o.root) / kManifestName).string(), manifest);
}

}  // namespace

Status generate_dataset(const GeneratorOptions& o, GeneratorReport& report) {
  if (Status st = prepare_root(o); !st.is_ok()) return st;
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t n = static_cast<std::uint64_t>(o.classes) * static_cast<std::uint64_t>(o.images_per_class);
  std::vector<Entry> entries(n);
  std::mutex err_mu;
  std::string first_error;
  std::atomic<std::uint64_t> finished{0}, resumed{0};
  std::atomic<bool> stopped{false};
  std::unique_ptr<tbb::global_control> limit;
  if (o.threads > 0) limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, o.threads);
  tbb::parallel_for(std::uint64_t{0}, n, [&](std::uint64_t i) {
    Made made = Made::written;
    if (Status st = make_image(o, i, entries[i], made); !st.is_ok()) {
      std::lock_guard<std::mutex> lock(err_mu);
      if (first_error.empty()) first_error = st.message();
    }
    if (made == Made::resumed) resumed.fetch_add(1, std::memory_order_relaxed);
    if (made == Made::stopped) stopped.store(true, std::memory_order_relaxed);
    finished.fetch_add(1, std::memory_order_release);  // publishes this entry to the reader below
  });
  // Acquire the workers' entries explicitly (the join inside parallel_for is invisible to ThreadSanitizer).
  if (finished.load(std::memory_order_acquire) != n) return Status::internal("dataset generation lost work");
  if (!first_error.empty()) return Status::io(fmt::format("dataset generation failed: {} ('{}' stays marked incomplete)", first_error, o.root));
  report = GeneratorReport{};
  report.resumed = resumed.load();
  if (stopped.load()) {
    report.interrupted = true;
    return Status::ok();
  }
  if (Status st = write_manifest(o, entries, report); !st.is_ok()) return st;
  std::error_code ec;
  const fs::path marker = fs::path(o.root) / kIncompleteMarker;
  fs::remove(marker, ec);
  if (ec) return Status::io(fmt::format("cannot remove '{}': {}", marker.string(), ec.message()));
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::ok();
}

Status ensure_default_dataset(std::string& root, bool verbose, const StopFlag* stop) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  fs::path cache = xdg && *xdg ? fs::path(xdg) : fs::path(home && *home ? home : "/tmp") / ".cache";
  const fs::path dir = cache / "stalldx" / "default-food101like-v1";
  root = dir.string();
  const fs::path stamp = dir / ".complete";
  if (fs::exists(stamp) && !fs::exists(dir / kIncompleteMarker)) return Status::ok();
  GeneratorOptions o;
  o.resume = fs::exists(dir / kIncompleteMarker);  // an earlier attempt was interrupted: finish it
  o.force = true;                                   // our own cache folder: whatever is there is ours
  o.root = root;
  o.classes = 101;
  o.images_per_class = 12;  // 1212 images: enough for several distinct batches of 128
  o.seed = 2026;
  o.stop = stop;
  if (verbose) write_stderr(fmt::format("stalldx: making the default dataset (once) in {}\n", root));
  GeneratorReport rep;
  Status st = generate_dataset(o, rep);
  if (!st.is_ok()) return st;
  if (rep.interrupted) return Status::io("interrupted while making the default dataset (it is resumed next time)");
  if (Status ws = write_file_atomic(stamp.string(), "ok\n"); !ws.is_ok()) return ws;
  if (verbose)
    write_stderr(fmt::format("stalldx: {} images, {:.1f} KB mean, in {:.1f} s\n", rep.images,
               rep.total_bytes / 1024.0 / static_cast<double>(rep.images), rep.seconds));
  return Status::ok();
}

}  // namespace stalldx::datasets
