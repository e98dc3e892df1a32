#include "stalldx/tasks/child_process.h"

#include "stalldx/clock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

extern char** environ;

namespace stalldx::tasks {

Status run_child(const std::vector<std::string>& argv, const std::string& log_path, ChildResult& result, const StopFlag* stop) {
  ChildOptions o;
  o.log_path = log_path;
  return run_child(argv, o, result, stop);
}

Status run_child(const std::vector<std::string>& argv, const ChildOptions& options, ChildResult& result, const StopFlag* stop) {
  result = ChildResult{};
  if (argv.empty()) return Status::invalid("run_child: empty argv");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The child's environment: ours, with options.env set or replaced.
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view kv(*e);
    bool replaced = false;
    for (const auto& [k, v] : options.env)
      if (kv.size() > k.size() && kv.substr(0, k.size()) == k && kv[k.size()] == '=') replaced = true;
    if (!replaced) env_storage.emplace_back(kv);
  }
  for (const auto& [k, v] : options.env) env_storage.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (!options.log_path.empty()) {
    posix_spawn_file_actions_addopen(&fa, 1, options.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
  }
  // The child leads its own group unless the terminal is ours to share (child_process.h).
  const bool own_group = options.own_process_group && !isatty(STDIN_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (own_group) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
  }
  pid_t pid = 0;
  const int rc = options.search_path ? posix_spawnp(&pid, argv[0].c_str(), &fa, &attr, args.data(), envp.data())
                                     : posix_spawn(&pid, argv[0].c_str(), &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Status::unavailable(fmt::format("cannot start '{}': {}", argv[0], std::strerror(rc)));
  if (options.on_start) options.on_start(pid);
  return wait_child(pid, own_group, options, result, stop);
}

namespace {
std::int64_t now_ms() { return monotonic_ns() / 1'000'000; }
}  // namespace

Status wait_child(int pid, bool own_group, const ChildOptions& options, ChildResult& result, const StopFlag* stop) {
  auto say = [&](const std::string& line) {
    if (options.notice) options.notice(line);
  };
  // A signal for the child: to its group when it leads one (its own children too), else to it alone
  // (our group is shared with it). SIGCONT follows, so a suspended child acts on it.
  auto send = [&](int sig) {
    kill(own_group ? -pid : pid, sig);
    if (sig != SIGKILL) kill(own_group ? -pid : pid, SIGCONT);
  };
  int acted_on = 0;          // stop raises handled so far
  std::int64_t kill_at = 0;  // when SIGKILL follows an escalation's SIGTERM (ms, CLOCK_MONOTONIC); 0 = none, -1 = sent
  for (;;) {
    int status = 0;
    const pid_t w = waitpid(pid, &status, WNOHANG | WUNTRACED);
    if (w == pid && WIFSTOPPED(status)) {
      const int sig = WSTOPSIG(status);
      result.suspended_by = sig;
      if (acted_on > 0) {
        kill(own_group ? -pid : pid, SIGCONT);  // being ended: it must run to act on the signal
      } else if (sig == SIGTTIN || sig == SIGTTOU) {
        say(fmt::format("the command (pid {}) is suspended by {}: it used the terminal while stalldx is in the background; "
                        "`fg` gives it the terminal, Ctrl-C ends it", pid, sigabbrev_np(sig) ? sigabbrev_np(sig) : "?"));
      } else if (!(sig == SIGTSTP && !own_group)) {  // Ctrl-Z suspended us too: the shell knows
        say(fmt::format("the command (pid {}) is suspended (SIG{}); `kill -CONT {}` resumes it, Ctrl-C ends it", pid,
                        sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", pid));
      }
      continue;
    }
    if (w == pid) {
      result.exited = WIFEXITED(status);
      result.code = result.exited ? WEXITSTATUS(status) : -1;
      result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      result.stopped = acted_on > 0;
      return Status::ok();
    }
    if (w < 0 && errno != EINTR) return Status::internal(fmt::format("waitpid: {}", std::strerror(errno)));
    const int raised = stop != nullptr && stop->stopped() ? std::max(1, stop->times()) : 0;
    if (raised > acted_on) {
      if (acted_on == 0) {
        const int sig = stop->signal.load() != 0 ? stop->signal.load() : SIGINT;
        // The terminal's Ctrl-C went to the whole foreground group, the child included: not again.
        if (own_group || !stop->from_terminal.load()) send(sig);
        else kill(pid, SIGCONT);
        say(fmt::format("waiting for the command (pid {}) to end; interrupt again to end it (SIGTERM, then SIGKILL after {:g} s)", pid,
                        options.kill_after_s));
        acted_on = 1;
      } else if (kill_at == 0) {
        send(SIGTERM);
        result.escalated = true;
        kill_at = now_ms() + static_cast<std::int64_t>(options.kill_after_s * 1000);
        say(fmt::format("sent SIGTERM to the command (pid {}); SIGKILL in {:g} s, or at the next interrupt", pid, options.kill_after_s));
        acted_on = raised;
      } else {
        if (kill_at > 0) kill_at = now_ms();  // a third interrupt: no more grace
        acted_on = raised;
      }
    }
    if (kill_at > 0 && now_ms() >= kill_at) {
      send(SIGKILL);
      kill_at = -1;  // sent once
    }
    const timespec ts{0, 20'000'000};
    nanosleep(&ts, nullptr);
  }
}

}  // namespace stalldx::tasks
