// Runs another program (argv, no shell: any path is safe), its stdout + stderr into a log file, and
// waits for it while watching a stop flag: when the flag rises the child gets the signal that raised it,
// a second rise ends it (SIGTERM, then SIGKILL), and a suspended child is reported, never waited on blindly.
#pragma once

#include <atomic>
#include <functional>
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
  bool escalated = false;  // a second stop sent SIGTERM (and SIGKILL after the grace period if still needed)
  int suspended_by = 0;    // the last signal that suspended it (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU), 0 = never
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
  // Unless stdin is a terminal: then the child stays in our process group, so it may read the terminal
  // when we are in the foreground (a pdb prompt, input()) and job control (Ctrl-Z, fg) moves us together;
  // the terminal's own Ctrl-C reaches it directly and is not forwarded a second time.
  bool own_process_group = false;
  // A second stop while the child runs sends it SIGTERM, and SIGKILL this many seconds later if it is
  // still there (as `timeout -k`); a third sends SIGKILL at once. A suspended child is sent SIGCONT after
  // each signal so that it can act on it.
  double kill_after_s = 5;
  // Said (one line, no newline) when the child is suspended, on the first stop, and on escalation. May be empty.
  std::function<void(const std::string&)> notice;
  std::function<void(std::int64_t pid)> on_start;  // told the child's pid once it runs (may be empty)
};
// As above with options. A program that cannot be started is Status::unavailable (the caller exits 127).
Status run_child(const std::vector<std::string>& argv, const ChildOptions& options, ChildResult& result, const StopFlag* stop = nullptr);
// The waiting half, for a child already started (`own_group`: it leads its own process group).
Status wait_child(int pid, bool own_group, const ChildOptions& options, ChildResult& result, const StopFlag* stop);

}  // namespace stalldx::tasks
