#include "dataset_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "stalldx/dataset_layout.h"
#include "stalldx/tsv.h"

namespace fs = std::filesystem;

namespace stalldx::pipeline {

namespace {

bool has_image_ext(const fs::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e == ".jpg" || e == ".jpeg";
}

Status load_tree(const fs::path& root, DatasetIndex& out) {
  std::error_code ec;
  std::vector<fs::path> dirs;
  for (fs::directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec)) dirs.push_back(it->path());
  if (ec) return Status::io(fmt::format("cannot list dataset folder '{}': {}", root.string(), ec.message()));
  std::sort(dirs.begin(), dirs.end());
  for (std::size_t c = 0; c < dirs.size(); ++c) {
    std::vector<fs::path> files;
    for (fs::directory_iterator it(dirs[c], fs::directory_options::skip_permission_denied, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code fe;
      // Symlinks are followed; a dangling or looping link is kept so that reading it is counted as bad.
      if (has_image_ext(it->path()) && (it->is_regular_file(fe) || it->is_symlink(fe))) files.push_back(it->path());
    }
    if (ec) {
      out.warnings.push_back(fmt::format("cannot list '{}': {}", dirs[c].string(), ec.message()));
      ec.clear();
      continue;
    }
    std::sort(files.begin(), files.end());
    out.classes.push_back(dirs[c].filename().string());
    for (auto& f : files) out.samples.push_back({f.string(), static_cast<std::int32_t>(out.classes.size() - 1)});
  }
  return Status::ok();
}

// An entry that names a file outside the dataset folder: absolute, or with a '..' component.
bool leads_outside(const fs::path& p) {
  if (p.is_absolute()) return true;
  return std::any_of(p.begin(), p.end(), [](const fs::path& part) { return part == ".."; });
}
bool refused_outside(const fs::path& p, const fs::path& file, std::size_t lineno, DatasetIndex& out) {
  if (out.confine.empty() || !leads_outside(p)) return false;
  out.outside_entries++;
  if (out.warnings.size() < 5)
    out.warnings.push_back(fmt::format("{}:{}: '{}' leads outside the dataset folder: refused (--data-outside reads it)", file.string(), lineno,
                                       p.string()));
  return true;
}

Status load_manifest(const fs::path& file, DatasetIndex& out) {
  std::ifstream in(file);
  if (!in) return Status::io(fmt::format("cannot open manifest '{}'", file.string()));
  const fs::path base = file.parent_path();
  std::map<std::int32_t, bool> labels;
  TsvRows rows(in);
  std::vector<std::string> f;
  while (rows.next(f)) {
    const std::size_t lineno = rows.lineno();
    f.resize(std::max<std::size_t>(f.size(), 2));
    const std::string& path = f[0];
    const std::string& label_s = f[1];
    std::int32_t label = 0;
    try {
      std::size_t used = 0;
      label = static_cast<std::int32_t>(std::stol(label_s, &used));
      if (used != label_s.size() || label < 0) throw std::invalid_argument("label");
    } catch (const std::exception&) {
      out.skipped_entries++;
      if (out.warnings.size() < 5)
        out.warnings.push_back(fmt::format("{}:{}: expected 'path<TAB>label', skipped", file.string(), lineno));
      continue;
    }
    fs::path p(path);
    if (refused_outside(p, file, lineno, out)) continue;
    if (p.is_relative()) p = base / p;
    out.samples.push_back({p.string(), label});
    labels[label] = true;
  }
  for (auto& [l, _] : labels) out.classes.push_back(fmt::format("{}", l));
  return Status::ok();
}

Status load_list(const fs::path& file, DatasetIndex& out) {
  std::ifstream in(file);
  if (!in) return Status::io(fmt::format("cannot open file list '{}'", file.string()));
  std::string line;
  std::map<std::string, std::int32_t> classes;
  std::vector<std::pair<std::string, std::string>> rows;
  std::size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    fs::path p(line);
    if (refused_outside(p, file, lineno, out)) continue;
    if (p.is_relative()) p = file.parent_path() / p;
    rows.emplace_back(p.string(), p.parent_path().filename().string());
    classes.emplace(rows.back().second, 0);
  }
  std::int32_t next = 0;
  for (auto& [name, id] : classes) { id = next++; out.classes.push_back(name); }
  for (auto& [path, cls] : rows) out.samples.push_back({path, classes[cls]});
  return Status::ok();
}

}  // namespace

Status load_index(const std::string& source, DatasetIndex& out, bool allow_outside) {
  out = DatasetIndex{};
  out.root = source;
  if (source.empty()) return Status::invalid("no dataset given");
  std::error_code ec;
  const fs::path p(source);
  if (!fs::exists(p, ec)) return Status::invalid(fmt::format("dataset '{}' does not exist", source));
  const fs::path folder = fs::is_directory(p, ec) ? p : p.parent_path();
  if (fs::exists(folder / kIncompleteMarker, ec))
    return Status::invalid(fmt::format("dataset '{}' is incomplete: its generation was interrupted or failed ({} is there); finish it with "
                                       "`stalldx dataset {} --resume` and the same options",
                                       source, kIncompleteMarker, folder.string()));
  if (!allow_outside) {
    out.confine = fs::canonical(folder.empty() ? fs::path(".") : folder, ec).string();
    if (ec) return Status::io(fmt::format("cannot resolve the dataset folder '{}': {}", folder.string(), ec.message()));
  }
  Status st;
  if (fs::is_directory(p, ec)) {
    st = fs::exists(p / kManifestName) ? load_manifest(p / kManifestName, out) : load_tree(p, out);
  } else if (p.extension() == ".tsv") {
    st = load_manifest(p, out);
  } else {
    st = load_list(p, out);
  }
  if (!st.is_ok()) return st;
  // Confined: every sample path written beneath the canonical folder (what the reader checks against).
  if (!out.confine.empty())
    for (SampleEntry& s : out.samples) s.path = (fs::path(out.confine) / fs::path(s.path).lexically_relative(folder.empty() ? "." : folder)).string();
  if (out.samples.empty()) return Status::invalid(fmt::format("dataset '{}' has no JPEG samples", source));
  return Status::ok();
}

}  // namespace stalldx::pipeline
