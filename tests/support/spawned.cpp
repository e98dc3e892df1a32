#include "spawned.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

extern char** environ;

namespace stalldx::testing {

Spawned::Spawned(const std::vector<std::string>& argv, const std::string& stdout_path) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, stdout_path.empty() ? "/dev/null" : stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ) == 0) pid_ = pid;
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  err_fd_ = fds[0];
  signalled_ = std::chrono::steady_clock::now();
}

Spawned::Spawned(WithTerminal, const std::vector<std::string>& argv, const std::string& stdout_path) {
  const int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) {
    if (master >= 0) close(master);
    return;
  }
  const std::string slave = ptsname(master);
  const std::string out = stdout_path.empty() ? "/dev/null" : stdout_path;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {  // only async-signal-safe calls until exec
    setsid();
    const int tty = open(slave.c_str(), O_RDWR);  // a session leader's first terminal becomes its controlling one
    if (tty < 0) _exit(126);
    ioctl(tty, TIOCSCTTY, 0);
    const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(tty, 0);
    dup2(o, 1);
    dup2(fds[1], 2);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  err_fd_ = fds[0];
  master_fd_ = master;
  if (pid > 0) pid_ = pid;
  signalled_ = std::chrono::steady_clock::now();
}

void Spawned::type(const std::string& keys) {
  signalled_ = std::chrono::steady_clock::now();
  if (master_fd_ >= 0) (void)!write(master_fd_, keys.data(), keys.size());
}

Spawned::~Spawned() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (err_fd_ >= 0) close(err_fd_);
  if (master_fd_ >= 0) close(master_fd_);
}

bool Spawned::wait_for_line(const std::string& needle, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    for (std::size_t nl; (nl = pending_.find('\n')) != std::string::npos;) {
      const std::string line = pending_.substr(0, nl + 1);
      pending_.erase(0, nl + 1);
      err_ += line;
      if (line.find(needle) != std::string::npos) return true;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0 || err_fd_ < 0) return false;
    pollfd p{err_fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(err_fd_, buf, sizeof buf);
    if (n <= 0) {
      err_ += pending_;
      pending_.clear();
      return false;
    }
    pending_.append(buf, static_cast<std::size_t>(n));
  }
}

void Spawned::signal(int sig) {
  signalled_ = std::chrono::steady_clock::now();
  if (pid_ > 0) kill(pid_, sig);
}

int Spawned::wait_exit(double& seconds, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t w = waitpid(pid_, &status, WNOHANG);
    if (w == pid_) break;
    if (std::chrono::steady_clock::now() > deadline) return -1;
    // Drain stderr meanwhile so the child never blocks on a full pipe.
    pollfd p{err_fd_, POLLIN, 0};
    if (err_fd_ < 0) {
      usleep(10000);
    } else if (poll(&p, 1, 10) > 0) {
      char buf[4096];
      const ssize_t n = read(err_fd_, buf, sizeof buf);
      if (n > 0) {
        err_.append(buf, static_cast<std::size_t>(n));
      } else {
        close(err_fd_);
        err_fd_ = -1;
      }
    }
  }
  reaped_ = true;
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled_).count();
  if (err_fd_ >= 0) {
    char buf[4096];
    for (ssize_t n; (n = read(err_fd_, buf, sizeof buf)) > 0;) err_.append(buf, static_cast<std::size_t>(n));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

}  // namespace stalldx::testing
