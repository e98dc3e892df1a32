// libFuzzer: a record parts folder from anyone (record --merge DIR): the input is cut at "\n@@\n" into
// a process's .proc, .names, a thread's .ranges (binary) and .cuda.json, written to a fresh folder,
// merged, and what merges is diagnosed and rendered. Must never crash, hang or leak.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/record/merge.h"

namespace {
const std::filesystem::path& folder() {
  static const std::filesystem::path dir = [] {
    std::string t = (std::filesystem::temp_directory_path() / "stalldx-parts-fuzz-XXXXXX").string();
    return std::filesystem::path(mkdtemp(t.data()) ? t : "/tmp/stalldx-parts-fuzz");
  }();
  return dir;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const char* kFiles[] = {"4242.proc", "4242.names", "4242.4243.ranges", "4242.cuda.json"};
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::filesystem::path& dir = folder();
  std::error_code ec;
  for (const char* f : kFiles) std::filesystem::remove(dir / f, ec);
  for (const char* f : kFiles) {
    const std::size_t cut = in.find("\n@@\n");
    std::ofstream(dir / f, std::ios::binary) << in.substr(0, cut);
    if (cut == std::string_view::npos) break;
    in.remove_prefix(cut + 4);
  }
  static const stalldx::record::RoleMap roles = stalldx::record::RoleMap::defaults();
  stalldx::Trace t;
  stalldx::record::MergeReport rep;
  if (stalldx::record::merge_parts(dir.string(), roles, {}, t, rep).is_ok()) {
    const stalldx::diagnose::Report r = stalldx::diagnose::diagnose(t);
    (void)stalldx::diagnose::report_text(r);
    (void)stalldx::diagnose::report_json(r);
  }
  return 0;
}
