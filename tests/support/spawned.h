// Test helper: the stalldx binary (or any program) as a child whose stderr the test reads line by line,
// so a test waits for a readiness line — never a fixed sleep — before it sends a signal.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace stalldx::testing {

class Spawned {
 public:
  // argv[0] is the program; stdout goes to `stdout_path` ("" = /dev/null); stderr is piped to the test.
  Spawned(const std::vector<std::string>& argv, const std::string& stdout_path = "");
  // As above, in a new session whose controlling terminal is a fresh pseudo-terminal, also its stdin:
  // type() writes to it as a user at the keyboard would ("\x03" is Ctrl-C). False: no pty could be made.
  struct WithTerminal {};
  Spawned(WithTerminal, const std::vector<std::string>& argv, const std::string& stdout_path = "");
  bool has_terminal() const { return master_fd_ >= 0; }
  void type(const std::string& keys);
  ~Spawned();  // kills the child if it is still running
  Spawned(const Spawned&) = delete;
  Spawned& operator=(const Spawned&) = delete;

  // Reads stderr until a line containing `needle` (true), or EOF / `timeout` (false). Everything read
  // so far is in stderr_text().
  bool wait_for_line(const std::string& needle, std::chrono::seconds timeout = std::chrono::seconds(120));
  void signal(int sig);
  // Waits for the exit; returns the exit code (128 + signal when killed by one; -1 on timeout) and the
  // seconds from the last signal() (or from the start) to the exit.
  int wait_exit(double& seconds_after_signal, std::chrono::seconds timeout = std::chrono::seconds(120));
  const std::string& stderr_text() const { return err_; }

 private:
  int pid_ = -1, err_fd_ = -1, master_fd_ = -1;
  std::string err_, pending_;
  std::chrono::steady_clock::time_point signalled_;
  bool reaped_ = false;
};

}  // namespace stalldx::testing
