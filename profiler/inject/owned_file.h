// A descriptor of the recorder's own inside a recorded program. The program may close descriptors it did
// not open (a daemon's closerange(3, ...), a launcher that closes all but 0-2) and then reuse their
// numbers for its own files, pipes and sockets: a number the recorder kept is then the program's, and a
// write, reservation or close through it would damage the program. So every use checks that the number
// still names the file it was opened on (fstat: device and inode); where it does not, the file is opened
// again by its path — the same file only (the same inode), never one that replaced it — and the old
// number is left alone (it is the program's now). No allocation after open(); not thread-safe (each owner
// uses its own from one thread, or under its lock).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace stalldx::inject {

class OwnedFile {
 public:
  // Opens `path` with `flags` (O_CLOEXEC is added); a later reopening uses `flags` without O_CREAT,
  // O_TRUNC or O_EXCL. False (and no descriptor) when the open fails.
  bool open(std::string path, int flags, mode_t mode = 0644) noexcept {
    close();
    const int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
    struct stat st {};
    if (fd < 0) return false;
    if (::fstat(fd, &st) != 0) {
      ::close(fd);
      return false;
    }
    fd_ = fd;
    dev_ = st.st_dev;
    ino_ = st.st_ino;
    reopen_flags_ = (flags & ~(O_CREAT | O_TRUNC | O_EXCL)) | O_CLOEXEC;
    try {
      path_ = std::move(path);
    } catch (...) {
      path_.clear();  // cannot be opened again; the descriptor still serves while it is ours
    }
    return true;
  }

  // The descriptor, checked: -1 when the number is no longer ours and the file cannot be opened again
  // (then the caller drops what it would have written, and counts it).
  int get() noexcept {
    if (fd_ < 0) return -1;
    if (ours(fd_)) return fd_;
    fd_ = -1;  // the number is the program's now: never closed or written by us again
    if (path_.empty()) return -1;
    const int fd = ::open(path_.c_str(), reopen_flags_);
    if (fd < 0) return -1;
    if (!ours(fd)) {  // the path names another file now (deleted and made again): not ours to write
      ::close(fd);
      return -1;
    }
    fd_ = fd;
    return fd_;
  }

  // Closes the descriptor if it is still ours (after fork the child holds the parent's numbers: the
  // program may have closed and reused them there too).
  void close() noexcept {
    if (fd_ >= 0 && ours(fd_)) ::close(fd_);
    fd_ = -1;
  }

 private:
  bool ours(int fd) const noexcept {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_;
  }

  int fd_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  int reopen_flags_ = 0;
  std::string path_;
};

}  // namespace stalldx::inject
