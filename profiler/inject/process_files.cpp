// The recorded process's names file and .proc line, and the library's one-time set-up (see
// process_files.h). fork(): the child starts from a fresh process state with a new generation, so its
// threads make new parts and its names go to its own <pid>.names.
#include "process_files.h"
#include "owned_file.h"
#include "part_writer.h"
#include "step_marks.h"
#include "stalldx/name_table.h"
#include "stalldx/rank_paths.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>

namespace stalldx::inject {

using namespace stalldx::record;

namespace {

using NameMap = TextMap<std::uint32_t>;

// Process-wide state; replaced in the child after fork.
struct ProcessState {
  std::mutex mu;  // names registration and the names file
  NameMap names, domains;
  std::uint32_t next_name = 1, next_domain = 1;
  OwnedFile names_file;   // <pid>.names (checked at each write: the program may close or reuse its number)
  bool files_open = false;
  std::int64_t pid = 0;
  std::atomic<std::uint64_t> generation{1};  // bumped by fork in the child
};
std::atomic<ProcessState*> g_state{nullptr};
ProcessState& state() {
  ProcessState* s = g_state.load(std::memory_order_acquire);
  if (s != nullptr) return *s;
  auto* fresh = new ProcessState;  // never destroyed: ranges may close during exit
  if (g_state.compare_exchange_strong(s, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;
  return *s;
}
std::string g_dir;
bool g_enabled = false;
std::uint64_t g_capacity = kPartRangeCapacity;

void write_line(int fd, char kind, std::uint64_t id, std::string_view text) {
  std::string line;
  line.reserve(text.size() + 24);
  line += kind;
  line += '\t';
  line += std::to_string(id);
  line += '\t';
  for (char c : text) {
    if (c == '\t') line += "\\t";
    else if (c == '\n') line += "\\n";
    else if (c == '\\') line += "\\\\";
    else line += c;
  }
  line += '\n';
  if (fd >= 0) (void)!::write(fd, line.data(), line.size());  // O_APPEND: one write per line
}

std::string read_cmdline() {
  std::string s;
  if (FILE* f = std::fopen("/proc/self/cmdline", "rb")) {
    char buf[4096];
    const std::size_t n = std::fread(buf, 1, sizeof buf, f);
    std::fclose(f);
    for (std::size_t i = 0; i < n; ++i) s += buf[i] == '\0' ? ' ' : buf[i];
    while (!s.empty() && s.back() == ' ') s.pop_back();
  }
  return s;
}

// A names file that already has lines belongs to an earlier program image of this pid (the process
// exec'd, or a pid reused during a long run): its threads' parts use those ids, so this image numbers its
// names and domains after them — the same id never names two things in one file.
void continue_after_earlier_image(const std::string& path, ProcessState& s) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t eol = std::min(text.find('\n', pos), text.size());
    const std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    if (line.size() < 3 || line[1] != '\t' || (line[0] != 'n' && line[0] != 'd')) continue;
    std::uint32_t id = 0;
    const std::string_view digits = line.substr(2, line.find('\t', 2) - 2);
    if (std::from_chars(digits.data(), digits.data() + digits.size(), id).ec != std::errc() || id == UINT32_MAX) continue;
    std::uint32_t& next = line[0] == 'n' ? s.next_name : s.next_domain;
    next = std::max(next, id + 1);
  }
}

// Opens this process's names file and writes its .proc line; caller holds state().mu.
void open_process_locked(ProcessState& s) {
  s.pid = getpid();
  const std::string base = g_dir + "/" + std::to_string(s.pid);
  s.files_open = s.names_file.open(base + ".names", O_WRONLY | O_CREAT | O_APPEND);
  if (struct stat st{}; s.files_open && ::fstat(s.names_file.get(), &st) == 0 && st.st_size > 0)
    continue_after_earlier_image(base + ".names", s);
  const int proc_fd = ::open((base + ".proc").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (proc_fd >= 0) {
    std::string line = std::to_string(s.pid) + "\t" + std::to_string(getppid()) + "\t";
    for (char c : read_cmdline()) line += (c == '\t' || c == '\n') ? ' ' : c;
    line += "\n";
    (void)!::write(proc_fd, line.data(), line.size());
    ::close(proc_fd);
  }
  // Started by a launcher as one rank of several (mpirun, srun, torchrun): its rank, the world's size
  // and the job, so `record -- mpirun ...` writes one trace per rank.
  if (const std::optional<LauncherRank> r = launcher_rank())
    write_line(s.names_file.get(), 'r', static_cast<std::uint64_t>(r->rank), std::to_string(r->size) + "\t" + r->job);
}

// In the child only the forking thread exists and the parent's mutex may have been held: the child
// starts from a fresh state (the old one is leaked) with a new generation, so its threads re-register.
void after_fork_child() {
  ProcessState* old = g_state.load(std::memory_order_acquire);
  auto* fresh = new ProcessState;
  fresh->generation.store((old != nullptr ? old->generation.load() : 1) + 1);
  g_state.store(fresh, std::memory_order_release);
  step_marks_after_fork();
}

std::once_flag g_init;
void init() {
  const char* dir = std::getenv(kRecordDirEnv);
  if (dir == nullptr || *dir == '\0') return;
  g_dir = dir;
  g_enabled = true;
  if (const char* cap = std::getenv(kPartCapacityEnv); cap != nullptr && *cap != '\0') {
    std::uint64_t v = 0;
    if (std::from_chars(cap, cap + std::char_traits<char>::length(cap), v).ec == std::errc{} && v >= 1024 && v < kPartRangeCapacity)
      g_capacity = v;
  }
  pthread_atfork(nullptr, nullptr, &after_fork_child);
  step_marks_init(g_dir);
}

ProcessState& process_locked_ready(std::unique_lock<std::mutex>& lock) {
  ProcessState& s = state();
  lock = std::unique_lock<std::mutex>(s.mu);
  if (!s.files_open || s.pid != getpid()) open_process_locked(s);
  return s;
}

std::uint32_t register_text(NameMap ProcessState::*map, std::uint32_t ProcessState::*next, char kind, std::string_view text) {
  std::unique_lock<std::mutex> lock;
  ProcessState& s = process_locked_ready(lock);
  auto it = (s.*map).find(text);
  if (it != (s.*map).end()) return it->second;
  const std::uint32_t id = (s.*next)++;
  (s.*map).emplace(std::string(text), id);
  write_line(s.names_file.get(), kind, id, text);
  if (kind == 'n') classify_step_name(id, text);  // under the process lock, once per name
  return id;
}

// One line of the names file, written under the process lock; failures are dropped (noexcept callers).
void write_names_line(char kind, std::uint64_t id, std::string_view text) noexcept {
  if (!enabled()) return;
  try {
    std::unique_lock<std::mutex> lock;
    ProcessState& s = process_locked_ready(lock);
    write_line(s.names_file.get(), kind, id, text);
  } catch (...) {
  }
}

}  // namespace

bool enabled() noexcept {
  std::call_once(g_init, init);
  return g_enabled;
}

const char* record_dir() noexcept { return enabled() ? g_dir.c_str() : ""; }
const std::string& record_directory() noexcept {
  (void)enabled();
  return g_dir;
}
std::uint64_t part_capacity() noexcept { return g_capacity; }
std::uint64_t process_generation() noexcept { return state().generation.load(std::memory_order_acquire); }

std::int64_t open_process_files() {
  std::unique_lock<std::mutex> lock;
  return process_locked_ready(lock).pid;
}

std::uint32_t register_name(std::string_view text) {
  return register_text(&ProcessState::names, &ProcessState::next_name, 'n', text);
}

std::uint32_t domain_id(std::string_view text) noexcept {
  if (!enabled()) return 0;
  try {
    return register_text(&ProcessState::domains, &ProcessState::next_domain, 'd', text);
  } catch (...) {
    return 0;
  }
}

void name_thread(std::int64_t tid, std::string_view name) noexcept { write_names_line('t', static_cast<std::uint64_t>(tid), name); }

void note_python_hook(std::string_view text) noexcept { write_names_line('h', 0, text); }

}  // namespace stalldx::inject
