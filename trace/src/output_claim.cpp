#include "stalldx/output_claim.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace stalldx {

Status OutputClaim::claim(const std::string& path) {
  release();
  const std::filesystem::path p(path);
  const std::string lock = (p.parent_path() / ("." + p.filename().string() + ".stalldx-lock")).string();
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd < 0) return Status::io(fmt::format("cannot create {} (to claim {}): {}", lock, path, std::strerror(errno)));
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return Status::invalid(fmt::format("{} is not a regular file: cannot claim {}", lock, path));
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      char buf[32] = {};
      const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
      ::close(fd);
      if (err != EWOULDBLOCK) return Status::io(fmt::format("cannot lock {}: {}", lock, std::strerror(err)));
      std::string holder(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
      return Status::invalid(fmt::format("another stalldx{} is writing {}: wait for it, or choose another path",
                                         holder.empty() ? "" : fmt::format(" (pid {})", holder), path));
    }
    // The holder before us may have removed the file between our open and our lock: then the lock is on
    // a file nobody else will find; take the one at the path now.
    struct stat now {};
    if (::stat(lock.c_str(), &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) {
      ::close(fd);
      continue;
    }
    const std::string pid = fmt::format("{}\n", getpid());
    if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, pid.data(), pid.size(), 0);
    fd_ = fd;
    lock_path_ = lock;
    return Status::ok();
  }
  return Status::io(fmt::format("cannot claim {}: its lock file {} keeps changing", path, lock));
}

void OutputClaim::release() noexcept {
  if (fd_ < 0) return;
  ::unlink(lock_path_.c_str());  // before the unlock: a waiter that locks the old file sees it gone and retries
  ::close(fd_);
  fd_ = -1;
  lock_path_.clear();
}

}  // namespace stalldx
