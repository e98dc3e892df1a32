#include "stalldx/output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace stalldx {

namespace fs = std::filesystem;

namespace {
// True when `path` (which may not exist yet) lies inside `dir` (which exists).
bool inside(const std::string& path, const std::string& dir) {
  std::error_code ec;
  const fs::path d = fs::weakly_canonical(dir, ec);
  if (ec) return false;
  const fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) return false;
  auto pi = p.begin();
  for (auto di = d.begin(); di != d.end(); ++di, ++pi)
    if (pi == p.end() || *pi != *di) return false;
  return true;
}

Status write_all(int fd, std::string_view content) {
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::io(std::strerror(errno));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return Status::ok();
}
}  // namespace

Status check_output_path(const std::string& path, OutputCheck& check) {
  check.replaced = false;
  if (path.empty()) return Status::invalid(fmt::format("the {} path is empty", check.kind));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      return Status::invalid(fmt::format("{} path '{}' exists and is not a regular file ({}); refusing to replace it", check.kind, path,
                                         S_ISDIR(st.st_mode) ? "a folder" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : S_ISFIFO(st.st_mode) ? "a FIFO" : "special"));
    check.replaced = true;
  }
  if (!check.forbidden_dir.empty() && inside(path, check.forbidden_dir))
    return Status::invalid(fmt::format("{} path '{}' is inside the dataset '{}'; refusing to write there", check.kind, path,
                                       check.forbidden_dir));
  // The folder must accept a new file now (fail before a long run, not after).
  const std::string probe = path + ".partial";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return Status::io(fmt::format("'{}' exists (another stalldx writing there?); remove it", probe));
    return Status::io(fmt::format("{} path '{}' is not writable: {}", check.kind, path, std::strerror(errno)));
  }
  const Status w = write_all(fd, "\n");
  ::close(fd);
  ::unlink(probe.c_str());
  if (!w.is_ok()) return Status::io(fmt::format("{} path '{}' cannot be written: {}", check.kind, path, w.message()));
  return Status::ok();
}

namespace {
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec) && !ec;
  const fs::path pa = fs::weakly_canonical(fs::absolute(a, ec), ec);
  if (ec) return false;
  const fs::path pb = fs::weakly_canonical(fs::absolute(b, ec), ec);
  return !ec && pa == pb;
}
}  // namespace

Status check_distinct_files(const std::vector<NamedPath>& files) {
  for (std::size_t i = 0; i < files.size(); ++i)
    for (std::size_t j = i + 1; j < files.size(); ++j)
      if ((files[i].output || files[j].output) && !files[i].path.empty() && !files[j].path.empty() && same_file(files[i].path, files[j].path))
        return Status::invalid(fmt::format("{} '{}' and {} '{}' are the same file: one would be written over the other; name another",
                                           files[j].what, files[j].path, files[i].what, files[i].path));
  return Status::ok();
}

Status refuse_non_regular(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return Status::invalid(fmt::format("'{}' exists and is not a regular file; refusing to write it", path));
  return Status::ok();
}

int create_temp_beside(const std::string& path, std::string& tmp) {
  tmp = path + ".partial-XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);  // O_CREAT | O_EXCL: never follows a planted link
  if (fd >= 0) ::fchmod(fd, 0644);
  return fd;
}

Status write_file_atomic(const std::string& path, std::string_view content) {
  if (Status st = refuse_non_regular(path); !st.is_ok()) return st;
  std::string tmp;
  const int fd = create_temp_beside(path, tmp);
  if (fd < 0) return Status::io(fmt::format("cannot create a temporary file beside '{}': {}", path, std::strerror(errno)));
  Status w = write_all(fd, content);
  if (w.is_ok() && ::fsync(fd) != 0) w = Status::io(std::strerror(errno));
  if (::close(fd) != 0 && w.is_ok()) w = Status::io(std::strerror(errno));
  if (!w.is_ok()) {
    ::unlink(tmp.c_str());
    return Status::io(fmt::format("writing '{}' failed: {}", path, w.message()));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Status::io(fmt::format("cannot move '{}' into place: {}", path, std::strerror(err)));
  }
  return Status::ok();
}

Status append_file(const std::string& path, std::string_view content) {
  if (Status st = refuse_non_regular(path); !st.is_ok()) return st;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::io(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  Status w = write_all(fd, content);
  if (w.is_ok() && ::fsync(fd) != 0) w = Status::io(std::strerror(errno));
  if (::close(fd) != 0 && w.is_ok()) w = Status::io(std::strerror(errno));
  if (!w.is_ok()) return Status::io(fmt::format("appending to '{}' failed: {}", path, w.message()));
  return Status::ok();
}

Status write_stdout(std::string_view text) {
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size())
    return Status::io(fmt::format("cannot write to standard output: {}", std::strerror(errno)));
  if (std::fflush(stdout) != 0) return Status::io(fmt::format("cannot write to standard output: {}", std::strerror(errno)));
  return Status::ok();
}

void write_stderr(std::string_view text) noexcept {
  if (!text.empty()) std::fwrite(text.data(), 1, text.size(), stderr);  // unbuffered: nothing to flush; a failure is dropped
}

}  // namespace stalldx
