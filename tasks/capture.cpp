#include "stalldx/tasks/capture.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "stalldx/record/merge.h"
#include "stalldx/record/part_format.h"
#include "stalldx/record/sampling.h"

namespace stalldx::tasks {

namespace {
// The value of `name` in PID's environment ("" when absent); false when it cannot be read.
bool environ_value(std::int64_t pid, const std::string& name, std::string& value) {
  std::ifstream in(fmt::format("/proc/{}/environ", pid), std::ios::binary);
  if (!in) return false;
  value.clear();
  const std::string prefix = name + "=";
  for (std::string entry; std::getline(in, entry, '\0');)
    if (entry.compare(0, prefix.size(), prefix) == 0) value = entry.substr(prefix.size());
  return true;
}

std::vector<std::int64_t> children(std::int64_t pid) {
  std::vector<std::int64_t> out;
  std::ifstream in(fmt::format("/proc/{}/task/{}/children", pid, pid));
  for (std::int64_t c = 0; in >> c;) out.push_back(c);
  return out;
}
}  // namespace

Status request_capture(std::int64_t pid, std::int64_t steps, CaptureRequest& out) {
  out = CaptureRequest{};
  if (steps < 1) return Status::invalid("--steps must be at least 1");
  std::string dir;
  if (!environ_value(pid, record::kRecordDirEnv, dir))
    return Status::invalid(fmt::format("process {} is not running or its environment cannot be read (another user's?)", pid));
  out.pid = pid;
  if (dir.empty())  // `stalldx record` itself: its command carries the recording
    for (const std::int64_t c : children(pid))
      if (environ_value(c, record::kRecordDirEnv, dir) && !dir.empty()) {
        out.pid = c;
        break;
      }
  if (dir.empty())
    return Status::invalid(fmt::format("process {} is not recorded (start it under stalldx record --on-demand -- CMD)", pid));
  // The folder comes from the other process's environment: only a parts folder of a record gets the
  // request (a real folder, not a link, named as record names them or holding part files).
  struct stat st{};
  const std::string name = std::filesystem::path(dir).filename().string();
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
      (name.rfind(record::kPartsFolderPrefix, 0) != 0 && record::count_part_files(dir) == 0))
    return Status::invalid(fmt::format("process {}: its {} ('{}') is not a stalldx parts folder; nothing written", out.pid, record::kRecordDirEnv, dir));
  (void)environ_value(out.pid, record::kSampleEnv, out.plan);
  if (out.plan.empty())
    return Status::invalid(fmt::format("process {} records every step's device activity already (its record has no "
                                       "--on-demand or --sample): nothing to ask for", out.pid));
  out.parts_dir = dir;
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const std::string line = fmt::format("{}-{}-{} {}\n", ts.tv_sec, ts.tv_nsec, getpid(), steps);
  // Written whole, then renamed over the request file: a poller reads an old request or the new one.
  std::string tmp = dir + "/.capture-XXXXXX";
  const int fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return Status::io(fmt::format("cannot write in {}: {}", dir, std::strerror(errno)));
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  if (!written || std::rename(tmp.c_str(), (dir + "/" + record::kCaptureFile).c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Status::io(fmt::format("cannot write the request in {}: {}", dir, std::strerror(errno)));
  }
  return Status::ok();
}

}  // namespace stalldx::tasks
