#include "storage.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cancellable_sleep.h"
#include "stalldx/profiler.h"

namespace stalldx::pipeline {

namespace {
struct Fd {
  int fd;
  ~Fd() { if (fd >= 0) ::close(fd); }
};
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

Status StorageReader::read(const std::string& path, std::vector<std::uint8_t>& buf, double extra_ms) {
  // O_NONBLOCK: opening a FIFO (or a link to one) must not wait for a writer; non-regular files are
  // refused right after.
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (f.fd < 0) return Status::io(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  struct stat st;
  if (::fstat(f.fd, &st) != 0) return Status::io(fmt::format("cannot stat '{}': {}", path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) return Status::io(fmt::format("'{}' is not a regular file", path));
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size == 0) return Status::io(fmt::format("'{}' is empty (zero bytes)", path));
  if (size > knobs_.max_file_bytes) return Status::io(fmt::format("'{}' is {} bytes, over the {} byte limit", path, size, knobs_.max_file_bytes));
  if (knobs_.cold_cache) ::posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
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
  const double wait_ms = knobs_.latency_ms + extra_ms;
  if (!throttle(size) || (wait_ms > 0 && !sleep_until(now_ns() + static_cast<std::int64_t>(wait_ms * 1e6), cancel_)))
    return Status::unavailable("read cancelled (stopping)");
  return Status::ok();
}

}  // namespace stalldx::pipeline
