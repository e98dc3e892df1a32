// Facts about a generated dataset folder shared by the generator (datasets/) and the index that reads
// it (pipeline/).
#pragma once

namespace stalldx {

// Present in a dataset folder from the start of its generation until its manifest is written: a folder
// that has it is incomplete and is never used as a dataset. It holds the generation's options.
inline constexpr const char* kIncompleteMarker = ".stalldx-incomplete";
inline constexpr const char* kManifestName = "manifest.tsv";

}  // namespace stalldx
