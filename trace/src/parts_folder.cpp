// The parts folder's own files, and removing them after a merge (merge.h). Only names of the parts
// format (part_format.h) go: `record --merge DIR` is given any folder a user names, and what else is in
// it is theirs.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <string>
#include <string_view>

#include "stalldx/record/merge.h"
#include "stalldx/record/part_format.h"
#include "stalldx/record/sampling.h"

namespace stalldx::record {

namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// A temporary file's name: `base` followed by `sep` and six characters of mkostemp's.
bool temporary_of(std::string_view name, std::string_view sep, std::string_view& base) {
  const auto at = name.rfind(sep);
  if (at == std::string_view::npos || name.size() - at - sep.size() != 6) return false;
  base = name.substr(0, at);
  return true;
}

}  // namespace

bool is_part_file_name(std::string_view name) {
  std::string_view base;
  if (name == kCaptureFile || (temporary_of(name, ".capture-", base) && base.empty())) return true;
  if (temporary_of(name, ".partial-", base)) name = base;  // a part written whole, cut by a kill
  const auto dot = name.find('.');
  if (dot == std::string_view::npos || !all_digits(name.substr(0, dot))) return false;
  const std::string_view rest = name.substr(dot);
  if (rest == ".proc" || rest == ".names" || rest == ".windows" || rest == ".cuda.started" || rest == ".cuda.json") return true;
  if (rest.size() > 7 && rest.substr(rest.size() - 7) == ".ranges") {  // .<tid>.ranges, or .<tid>.<image>.ranges (an exec)
    const std::string_view middle = rest.substr(1, rest.size() - 8);
    const auto dot2 = middle.find('.');
    return dot2 == std::string_view::npos ? all_digits(middle) : all_digits(middle.substr(0, dot2)) && all_digits(middle.substr(dot2 + 1));
  }
  constexpr std::string_view window = ".cuda.w", json = ".json";
  return rest.size() > window.size() + json.size() && rest.substr(0, window.size()) == window &&
         rest.substr(rest.size() - json.size()) == json && all_digits(rest.substr(window.size(), rest.size() - window.size() - json.size()));
}

std::size_t count_part_files(const std::string& dir) {
  std::size_t n = 0;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  // A recorded process's own files (<pid>.…): a capture request alone is no recording.
  while (const dirent* e = ::readdir(d)) n += std::isdigit(static_cast<unsigned char>(e->d_name[0])) && is_part_file_name(e->d_name) ? 1 : 0;
  ::closedir(d);
  return n;
}

std::size_t remove_parts_folder(const std::string& dir) {
  std::size_t others = 0;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  const int fd = ::dirfd(d);
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st{};
    // Only regular files of the format's names, never through a link (unlinkat removes the link itself).
    if (is_part_file_name(name) && ::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        ::unlinkat(fd, e->d_name, 0) == 0)
      continue;
    ++others;
  }
  ::closedir(d);
  if (others == 0) ::rmdir(dir.c_str());
  return others;
}

}  // namespace stalldx::record
