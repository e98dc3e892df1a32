#include "stalldx/rank_paths.h"

#include <fmt/format.h>

#include <algorithm>
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

Status expand_trace_folders(std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(p, ec)) {
      out.push_back(p);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : std::filesystem::directory_iterator(p, ec)) {
      const std::string name = e.path().filename().string();
      const bool trace = name.size() > 5 && (name.ends_with(".json") || name.ends_with(".json.gz"));
      std::error_code fec;
      if (trace && name[0] != '.' && e.is_regular_file(fec) && !e.is_symlink(fec)) found.push_back(e.path().string());
    }
    if (ec) return Status::io(fmt::format("{}: {}", p, ec.message()));
    if (found.empty()) return Status::invalid(fmt::format("{}: a folder with no trace in it (*.json, *.json.gz)", p));
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  paths = std::move(out);
  return Status::ok();
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
    // The job: the same text on every rank of one launch, different for the next launch.
    for (const char* job_var : {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "PMI_JOBID"}) {
      const char* v = std::getenv(job_var);
      if (v == nullptr || *v == '\0') continue;
      r.job = v;
      if (std::string_view(job_var) == "SLURM_JOB_ID")
        if (const char* step = std::getenv("SLURM_STEP_ID"); step != nullptr) r.job += std::string(".") + step;
      break;
    }
    if (r.job.empty())
      if (const char* addr = std::getenv("MASTER_ADDR"), *port = std::getenv("MASTER_PORT"); addr != nullptr && port != nullptr)
        r.job = std::string(addr) + ":" + port;  // torchrun without an elastic run id
    return r;
  }
  return std::nullopt;
}

}  // namespace stalldx
