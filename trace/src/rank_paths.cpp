#include "stalldx/rank_paths.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <string_view>

namespace stalldx {

std::string rank_trace_path(const std::string& path, int rank) {
  const std::filesystem::path p(path);
  std::string ext = p.extension().string(), stem = p.stem().string();
  if (ext == ".gz") {  // out.json.gz -> out.rank2.json.gz
    const std::filesystem::path inner(stem);
    ext = inner.extension().string() + ext;
    stem = inner.stem().string();
  }
  return (p.parent_path() / fmt::format("{}.rank{}{}", stem, rank, ext)).string();
}

std::string rank_trace_pattern(const std::string& rank_path, int rank) {
  std::string p = rank_path;
  const std::string mine = fmt::format(".rank{}", rank);
  if (const auto at = p.rfind(mine); at != std::string::npos) p.replace(at, mine.size(), ".rank*");
  return p;
}

namespace {
bool env_int(const char* name, int& v) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return false;
  const std::string_view t(s);
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  return ec == std::errc() && end == t.data() + t.size();
}
}  // namespace

std::optional<LauncherRank> launcher_rank() {
  static constexpr std::pair<const char*, const char*> kPairs[] = {
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, {"PMIX_RANK", "PMIX_SIZE"}, {"PMI_RANK", "PMI_SIZE"},
      {"SLURM_PROCID", "SLURM_NTASKS"},                 {"RANK", "WORLD_SIZE"}};
  for (const auto& [rank_var, size_var] : kPairs) {
    LauncherRank r;
    if (!env_int(rank_var, r.rank) || !env_int(size_var, r.size)) continue;
    if (r.size < 2 || r.rank < 0 || r.rank >= r.size) continue;
    r.source = rank_var;
    return r;
  }
  return std::nullopt;
}

}  // namespace stalldx
