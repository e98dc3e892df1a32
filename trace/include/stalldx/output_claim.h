// One writer per output: while a command holds the claim on a path, another stalldx that claims the
// same path is refused at its start (a clear error) instead of both racing to rename their results
// over each other. The claim is an advisory lock (flock) on a hidden file beside the output,
// `.NAME.stalldx-lock`; the kernel releases it however the holder ends, and the holder removes the file.
#pragma once

#include <string>

#include "stalldx/status.h"

namespace stalldx {

class OutputClaim {
 public:
  OutputClaim() = default;
  ~OutputClaim() { release(); }
  OutputClaim(const OutputClaim&) = delete;
  OutputClaim& operator=(const OutputClaim&) = delete;

  // OK, or invalid_argument naming the path and the process that holds it; io_error when the lock file
  // cannot be made (the folder is not writable: the write would fail too).
  Status claim(const std::string& path);
  void release() noexcept;

 private:
  int fd_ = -1;
  std::string lock_path_;
};

}  // namespace stalldx
