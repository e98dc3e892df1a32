// Retrieval: one file's bytes into a caller-owned, reused buffer, with knobs that reproduce slow
// storage. Thread-safe: any number of workers share one StorageReader.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "stalldx/status.h"

namespace stalldx::pipeline {

// Without `cold_cache`, the latency and the bandwidth cap apply to every read (slow storage). With it,
// each file's page-cache pages are dropped before the read and the two describe the device *behind*
// the page cache: they apply only to reads that missed it (found with a non-blocking probe read), as
// on a network volume or a dataset larger than memory. A file system that keeps no page cache of its
// own (tmpfs) never misses, so there the knob costs nothing.
struct StorageKnobs {
  double latency_ms = 0;        // added to every read (every miss with cold_cache)
  double bandwidth_mbps = 0;    // MB/s shared by every reader (token bucket); 0 = uncapped
  bool cold_cache = false;      // drop the file's page-cache pages before reading it
  std::uint64_t max_file_bytes = 64ull << 20;  // larger files are refused (not a sample)
  // Every open stays beneath this canonical folder (the dataset's): a path or link that leads out of it
  // is refused. Empty: any path is read (--data-outside).
  std::string confine_root;
};

class StorageReader {
 public:
  // `cancel` (may be null, must outlive the reader): every emulated wait wakes within ~20 ms of it
  // becoming true and the read returns `unavailable`.
  explicit StorageReader(StorageKnobs knobs, const std::atomic<bool>* cancel = nullptr);
  ~StorageReader();
  StorageReader(const StorageReader&) = delete;
  StorageReader& operator=(const StorageReader&) = delete;
  // Reads the whole regular file at `path` into `buf` (resized; capacity reused) with pread. Never
  // blocks on a FIFO or device (opened non-blocking, refused unless regular). `extra_ms` adds a one-off
  // latency (the periodic slow-file knob). Errors name the path and the errno text.
  Status read(const std::string& path, std::vector<std::uint8_t>& buf, double extra_ms = 0);
  // Reads that missed the page cache (cold_cache only); relaxed, for the run's report.
  std::uint64_t cache_misses() const { return misses_.load(std::memory_order_relaxed); }

 private:
  bool throttle(std::uint64_t bytes);
  int open_sample(const std::string& path, Status& refused) const;
  StorageKnobs knobs_;
  const std::atomic<bool>* cancel_;
  int root_fd_ = -1;  // confine_root opened O_PATH (the base of every confined open)
  std::atomic<std::int64_t> next_free_ns_{0};
  std::atomic<std::uint64_t> misses_{0};  // token bucket: when the shared "device" is free again
};

}  // namespace stalldx::pipeline
