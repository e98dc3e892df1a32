// `stalldx capture PID [--steps K]`: asks a running `stalldx record --on-demand` (or `--sample`) for the
// device records of the next K steps. PID is a recorded process or the `record` itself; the request is
// a file in the recording's parts folder (record/sampling.h kCaptureFile) that its processes poll.
#pragma once

#include <cstdint>
#include <string>

#include "stalldx/status.h"

namespace stalldx::tasks {

struct CaptureRequest {
  std::int64_t pid = 0;       // the process whose recording was asked (PID, or its recorded child)
  std::string parts_dir;      // that recording's parts folder
  std::string plan;           // its --sample plan ("on-demand", "5/100", ...)
};

// Fails, naming PID, when it is not running, not readable by us, or not recorded in windows (a full
// recording has device records already; a program not under `record` has no parts folder).
Status request_capture(std::int64_t pid, std::int64_t steps, CaptureRequest& out);

}  // namespace stalldx::tasks
