// Food-101-like dataset generator: an ImageFolder tree (root/<class>/<image>.jpg) plus a manifest.
#pragma once

#include <cstdint>
#include <string>

#include "stalldx/dataset_layout.h"
#include "stalldx/status.h"
#include "stalldx/stop.h"

namespace stalldx::datasets {

struct GeneratorOptions {
  std::string root;                 // output folder (created)
  int classes = 101;
  int images_per_class = 10;
  std::uint64_t seed = 1;
  float detail = 1.f;               // ImageSpec::detail of every image (fine texture and grain: file size)
  double bad_fraction = 0.0;        // planted bad files: truncated, zero-byte, garbage, non-JPEG (cycled)
  int threads = 0;                  // 0 = all cores
  bool resume = false;              // finish an interrupted generation: keep the images already written
  bool force = false;               // write into a non-empty folder (same-named files and the manifest replaced)
  const StopFlag* stop = nullptr;   // polled per image; when raised, generation ends early (marker kept)
};


struct GeneratorReport {
  std::uint64_t images = 0, bad_planted = 0, total_bytes = 0;
  std::uint64_t resumed = 0;        // images kept from an interrupted generation
  double seconds = 0;
  bool interrupted = false;         // stopped early: the folder keeps its incomplete marker
};

// Writes the tree and root/manifest.tsv (path, label, bytes, width, height, kind). Deterministic for a
// seed: the same options produce byte-identical files. Each image is written to a temporary name and
// renamed, so a file that exists is whole; the manifest is written last and then the incomplete marker
// removed. `resume` refuses (invalid_argument) a marker written with other options.
Status generate_dataset(const GeneratorOptions& options, GeneratorReport& report);

// The built-in default set `stalldx run` uses without --data: made once under the cache folder
// ($XDG_CACHE_HOME or ~/.cache)/stalldx/, reused after; an interrupted making is resumed. Returns its root.
Status ensure_default_dataset(std::string& root, bool verbose, const StopFlag* stop = nullptr);

}  // namespace stalldx::datasets
