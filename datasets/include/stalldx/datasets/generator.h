// Food-101-like dataset generator: an ImageFolder tree (root/<class>/<image>.jpg) plus a manifest.
#pragma once

#include <cstdint>
#include <string>

#include "stalldx/status.h"

namespace stalldx::datasets {

struct GeneratorOptions {
  std::string root;                 // output folder (created)
  int classes = 101;
  int images_per_class = 10;
  std::uint64_t seed = 1;
  double bad_fraction = 0.0;        // planted bad files: truncated, zero-byte, garbage, non-JPEG (cycled)
  int threads = 0;                  // 0 = all cores
};

struct GeneratorReport {
  std::uint64_t images = 0, bad_planted = 0, total_bytes = 0;
  double seconds = 0;
};

// Writes the tree and root/manifest.tsv (path, label, bytes, width, height, kind). Deterministic for a
// seed: the same options produce byte-identical files.
Status generate_dataset(const GeneratorOptions& options, GeneratorReport& report);

// The built-in default set `stalldx run` uses without --data: made once under the cache folder
// ($XDG_CACHE_HOME or ~/.cache)/stalldx/, reused after. Returns its root.
Status ensure_default_dataset(std::string& root, bool verbose);

}  // namespace stalldx::datasets
