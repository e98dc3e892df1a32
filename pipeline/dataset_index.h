// The dataset index: every sample's path and label, from an ImageFolder tree, a manifest (.tsv: path,
// label, ...) or a plain file list (one path per line, label = parent folder order).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stalldx/status.h"

namespace stalldx::pipeline {

struct SampleEntry {
  std::string path;   // absolute or relative to the process cwd
  std::int32_t label = 0;
};

struct DatasetIndex {
  std::string root;
  std::vector<SampleEntry> samples;
  std::vector<std::string> classes;
  std::uint64_t skipped_entries = 0;   // manifest lines that could not be parsed (counted, named in warnings)
  std::uint64_t outside_entries = 0;   // manifest / list entries leading outside the dataset folder (refused, counted)
  // The dataset folder, canonical, that every read stays beneath (storage.h); empty = not confined.
  std::string confine;
  std::vector<std::string> warnings;
};

// Loads `source`: a directory (ImageFolder; uses its manifest.tsv when present), a .tsv manifest, or a
// .txt file list. Deterministic order (sorted). Empty result → invalid_argument. Unless `allow_outside`,
// entries that are absolute or climb out with '..' are refused (counted, warned), the sample paths are
// under `out.confine`, and the reader keeps every open beneath it (links out refused too).
Status load_index(const std::string& source, DatasetIndex& out, bool allow_outside = false);

}  // namespace stalldx::pipeline
