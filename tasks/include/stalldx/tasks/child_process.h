// Runs another program (argv, no shell: any path is safe), its stdout + stderr into a log file, and
// waits for it while watching a stop flag: when the flag rises the child gets the signal that raised it.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "stalldx/status.h"
#include "stalldx/stop.h"

namespace stalldx::tasks {

struct ChildResult {
  bool exited = false;   // exited normally (then `code`), else killed by `signal`
  int code = -1;
  int signal = 0;
  bool stopped = false;  // the stop flag rose while it ran (the child was signalled)
};

// `argv[0]` is the program path. Output goes to `log_path` (truncated). When `stop` rises the child
// gets the same signal (SIGINT when code raised it). Waits with a 20 ms poll, so a stop is seen even
// when the signal arrived just before the wait began.
Status run_child(const std::vector<std::string>& argv, const std::string& log_path, ChildResult& result, const StopFlag* stop = nullptr);

struct ChildOptions {
  std::string log_path;  // empty: the child shares our stdout/stderr
  std::vector<std::pair<std::string, std::string>> env;  // set (or replaced) in the child's environment
  bool search_path = false;  // argv[0] without a '/' is looked up in PATH (posix_spawnp)
  // The child leads its own process group and a stop is forwarded to the group once (a terminal's
  // Ctrl-C then reaches it through us only, not twice).
  bool own_process_group = false;
};
// As above with options. A program that cannot be started is Status::unavailable (the caller exits 127).
Status run_child(const std::vector<std::string>& argv, const ChildOptions& options, ChildResult& result, const StopFlag* stop = nullptr);

}  // namespace stalldx::tasks
