// Retrieval: one file's bytes into a caller-owned, reused buffer, with knobs that reproduce slow
// storage. Thread-safe: any number of workers share one StorageReader.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "stalldx/status.h"

namespace stalldx::pipeline {

struct StorageKnobs {
  double latency_ms = 0;        // added to every read
  double bandwidth_mbps = 0;    // MB/s shared by every reader (token bucket); 0 = uncapped
  bool cold_cache = false;      // drop the file's page-cache pages before reading it
  std::uint64_t max_file_bytes = 64ull << 20;  // larger files are refused (not a sample)
};

class StorageReader {
 public:
  // `cancel` (may be null, must outlive the reader): every emulated wait wakes within ~20 ms of it
  // becoming true and the read returns `unavailable`.
  explicit StorageReader(StorageKnobs knobs, const std::atomic<bool>* cancel = nullptr) : knobs_(knobs), cancel_(cancel) {}
  // Reads the whole regular file at `path` into `buf` (resized; capacity reused) with pread. Never
  // blocks on a FIFO or device (opened non-blocking, refused unless regular). `extra_ms` adds a one-off
  // latency (the periodic slow-file knob). Errors name the path and the errno text.
  Status read(const std::string& path, std::vector<std::uint8_t>& buf, double extra_ms = 0);

 private:
  bool throttle(std::uint64_t bytes);
  StorageKnobs knobs_;
  const std::atomic<bool>* cancel_;
  std::atomic<std::int64_t> next_free_ns_{0};  // token bucket: when the shared "device" is free again
};

}  // namespace stalldx::pipeline
