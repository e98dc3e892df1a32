#include "stalldx/tasks/child_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>

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
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (options.own_process_group) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
  }
  pid_t pid = 0;
  const int rc = options.search_path ? posix_spawnp(&pid, argv[0].c_str(), &fa, &attr, args.data(), envp.data())
                                     : posix_spawn(&pid, argv[0].c_str(), &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Status::unavailable(fmt::format("cannot start '{}': {}", argv[0], std::strerror(rc)));
  bool signalled = false;
  for (;;) {
    int status = 0;
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      result.exited = WIFEXITED(status);
      result.code = result.exited ? WEXITSTATUS(status) : -1;
      result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      result.stopped = signalled;
      return Status::ok();
    }
    if (w < 0 && errno != EINTR) return Status::internal(fmt::format("waitpid: {}", std::strerror(errno)));
    if (!signalled && stop != nullptr && stop->stopped()) {
      const int sig = stop->signal.load() != 0 ? stop->signal.load() : SIGINT;
      kill(options.own_process_group ? -pid : pid, sig);
      signalled = true;
    }
    const timespec ts{0, 20'000'000};
    nanosleep(&ts, nullptr);
  }
}

}  // namespace stalldx::tasks
