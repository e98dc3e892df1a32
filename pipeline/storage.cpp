#include "storage.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "cancellable_sleep.h"
#include "stalldx/profiler.h"

namespace stalldx::pipeline {

namespace {
struct Fd {
  int fd;
  ~Fd() { if (fd >= 0) ::close(fd); }
};

// True when the first page of the file is not in the page cache: a one-byte read that may not block
// (RWF_NOWAIT) fails with EAGAIN. File systems that do not support the flag (tmpfs) are asked with
// mincore() on a one-page mapping; one that can answer neither counts as a miss (its pages were just
// dropped).
bool misses_page_cache(int fd) {
  std::uint8_t byte;
  struct iovec v{&byte, 1};
  for (;;) {
    const ssize_t n = ::preadv2(fd, &v, 1, 0, RWF_NOWAIT);
    if (n >= 0) return false;
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return true;
    break;
  }
  const long page = ::sysconf(_SC_PAGESIZE);
  void* m = ::mmap(nullptr, static_cast<std::size_t>(page), PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return true;
  unsigned char resident = 0;
  const bool known = ::mincore(m, static_cast<std::size_t>(page), &resident) == 0;
  ::munmap(m, static_cast<std::size_t>(page));
  return !known || (resident & 1) == 0;
}
}  // namespace

bool StorageReader::throttle(std::uint64_t bytes) {
  if (knobs_.bandwidth_mbps <= 0) return true;
  const auto cost = static_cast<std::int64_t>(static_cast<double>(bytes) / (knobs_.bandwidth_mbps * 1e6) * 1e9);
  const std::int64_t now = now_ns();
  std::int64_t prev = next_free_ns_.load(std::memory_order_relaxed);
  std::int64_t done;
  do {
    done = std::max(prev, now) + cost;
  } while (!next_free_ns_.compare_exchange_weak(prev, done, std::memory_order_relaxed));
  return sleep_until(done, cancel_);
}

StorageReader::StorageReader(StorageKnobs knobs, const std::atomic<bool>* cancel) : knobs_(std::move(knobs)), cancel_(cancel) {
  if (!knobs_.confine_root.empty()) root_fd_ = ::open(knobs_.confine_root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
}

StorageReader::~StorageReader() {
  if (root_fd_ >= 0) ::close(root_fd_);
}

// O_NONBLOCK: opening a FIFO (or a link to one) must not wait for a writer; non-regular files are
// refused right after. Confined: resolved beneath the dataset folder by the kernel (openat2
// RESOLVE_BENEATH: no '..', absolute path or link may leave it); an absolute link, or a kernel without
// openat2, has its resolved path checked against the folder before the open.
int StorageReader::open_sample(const std::string& path, Status& refused) const {
  constexpr int kFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
  if (knobs_.confine_root.empty()) return ::open(path.c_str(), kFlags);
  const std::string& root = knobs_.confine_root;
  const bool beneath = path.size() > root.size() + 1 && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/';
  auto outside = [&] {
    refused = Status::io(fmt::format("'{}' leads outside the dataset folder {} (a link?): refused (--data-outside reads it)", path, root));
    return -1;
  };
  if (!beneath || root_fd_ < 0) return outside();
  open_how how{};
  how.flags = kFlags;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  const int fd = static_cast<int>(::syscall(SYS_openat2, root_fd_, path.c_str() + root.size() + 1, &how, sizeof how));
  if (fd >= 0) return fd;
  // EXDEV: it leaves the folder, or it is an absolute link (which RESOLVE_BENEATH never follows, even
  // to a file inside): decided on the resolved path.
  if (errno != EXDEV && errno != ENOSYS) return -1;
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return -1;
  const std::string r(resolved);
  if (r.size() <= root.size() || r.compare(0, root.size(), root) != 0 || r[root.size()] != '/') return outside();
  return ::open(resolved, kFlags | O_NOFOLLOW);
}

Status StorageReader::read(const std::string& path, std::vector<std::uint8_t>& buf, double extra_ms) {
  Status refused;
  Fd f{open_sample(path, refused)};
  if (!refused.is_ok()) return refused;
  if (f.fd < 0) return Status::io(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  struct stat st;
  if (::fstat(f.fd, &st) != 0) return Status::io(fmt::format("cannot stat '{}': {}", path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) return Status::io(fmt::format("'{}' is not a regular file", path));
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size == 0) return Status::io(fmt::format("'{}' is empty (zero bytes)", path));
  if (size > knobs_.max_file_bytes) return Status::io(fmt::format("'{}' is {} bytes, over the {} byte limit", path, size, knobs_.max_file_bytes));
  bool device_read = true;  // the read reaches the (emulated) storage device
  if (knobs_.cold_cache) {
    // Dirty pages are not dropped: a dataset written moments ago (the built-in one on first use) would
    // stay cached until written back. fdatasync is a no-op on a clean file.
    ::fdatasync(f.fd);
    ::posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
    device_read = misses_page_cache(f.fd);
    if (device_read) misses_.fetch_add(1, std::memory_order_relaxed);
  }
  buf.resize(size);
  std::uint64_t got = 0;
  while (got < size) {
    const ssize_t n = ::pread(f.fd, buf.data() + got, size - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::io(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
    if (n == 0) break;
    got += static_cast<std::uint64_t>(n);
  }
  if (got != size) return Status::io(fmt::format("'{}' shrank while reading ({} of {} bytes)", path, got, size));
  const double wait_ms = (device_read ? knobs_.latency_ms : 0) + extra_ms;
  if ((device_read && !throttle(size)) || (wait_ms > 0 && !sleep_until(now_ns() + static_cast<std::int64_t>(wait_ms * 1e6), cancel_)))
    return Status::unavailable("read cancelled (stopping)");
  return Status::ok();
}

}  // namespace stalldx::pipeline
