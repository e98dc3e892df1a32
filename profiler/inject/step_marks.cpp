#include "step_marks.h"
#include "owned_file.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "stalldx/name_pattern.h"
#include "stalldx/clock.h"
#include "stalldx/record/part_format.h"
#include "stalldx/record/role_map.h"
#include "stalldx/record/step_inference.h"

namespace stalldx::inject {

namespace {

constexpr std::uint32_t kLevelIds = 1u << 20;  // name ids classified; later ids (rare) are never steps

std::int64_t now_ns() noexcept { return monotonic_ns(); }

// The process's schedule. Replaced whole in a forked child (the parent's lock may have been held).
struct Marks {
  std::mutex mu;
  record::WindowScheduler scheduler{record::SamplePlan{}};
  std::int64_t boundaries = 0;     // counted step boundaries (the index of the step that begins)
  int best_level = 0;              // the best step level seen so far
  std::int64_t step_tid = 0;       // the thread that gave it
  std::int64_t window = 0;         // windows opened so far (the open one's number when recording)
  OwnedFile file;                  // <pid>.windows (checked at each write)
  WindowHook hook = nullptr;
  std::unique_ptr<std::atomic<std::uint8_t>[]> levels{new std::atomic<std::uint8_t>[kLevelIds]()};
  std::unordered_map<std::string, int> families;  // masked name -> names seen (under the names lock)
};

bool g_sampling = false;
record::SamplePlan g_plan;
std::string g_dir;
NamePattern g_step;                    // --step, passed through the environment
std::unique_ptr<record::RoleMap> g_roles;  // a roles file's rules + the built-in words
std::atomic<Marks*> g_marks{nullptr};

void write_mark(Marks& m, const char* what, std::int64_t ns) {
  const int fd = m.file.get();
  if (fd < 0) return;
  const std::string line = std::string(what) + "\t" + std::to_string(m.window) + "\t" + std::to_string(ns) + "\t" +
                           std::to_string(m.boundaries - 1) + "\n";
  (void)!::write(fd, line.data(), line.size());  // O_APPEND: one write per line
}

Marks* fresh_marks() {
  auto* m = new Marks;  // never destroyed: ranges may begin during exit
  m->scheduler = record::WindowScheduler(g_plan);
  const std::string path = g_dir + "/" + std::to_string(getpid()) + ".windows";
  if (m->file.open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW)) {
    const std::string plan = record::plan_mark(g_plan);
    (void)!::write(m->file.get(), plan.data(), plan.size());
  }
  if (m->scheduler.recording()) write_mark(*m, "attach", now_ns());  // open from the start
  return m;
}

// Applies the scheduler's answer at boundary `index`, the step that begins at `at_ns`; the caller holds
// m.mu. The edge is marked at the step's begin: attaching happens before the step's first CUDA call
// (this thread marks the step and then makes its calls), detaching after the last one of the step before.
void edge(Marks& m, std::int64_t index, std::int64_t at_ns) {
  const record::WindowAction a = m.scheduler.on_boundary(index);
  if (a == record::WindowAction::none) return;
  if (a == record::WindowAction::prepare || a == record::WindowAction::release) {  // no edge of a window
    if (m.hook != nullptr) m.hook(a, a == record::WindowAction::prepare ? m.window + 1 : m.window, false);
    return;
  }
  if (a == record::WindowAction::attach) {
    if (m.hook != nullptr && !m.hook(a, m.window + 1, m.scheduler.wants_next(index))) {  // busy: this step goes unrecorded
      m.scheduler.attach_refused();
      return;
    }
    ++m.window;
    write_mark(m, "attach", at_ns);
  } else {
    write_mark(m, "detach", at_ns);
    if (m.hook != nullptr) m.hook(a, m.window, false);
  }
}

// `record --on-demand`: polls the parts folder's capture file (sampling.h kCaptureFile) five times a
// second and hands each new request to the schedule. One thread per recording process (not in forked
// children: a loader worker has no device work to capture).
void poll_captures() {
  std::thread([] {
    std::string last_id;
    const std::string path = g_dir + "/" + record::kCaptureFile;
    for (;;) {
      timespec ts{0, 200'000'000};
      while (nanosleep(&ts, &ts) != 0) {
      }
      char buf[64] = {};
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
      if (fd < 0) continue;
      const ssize_t n = ::read(fd, buf, sizeof buf - 1);
      ::close(fd);
      if (n <= 0) continue;
      std::string_view text(buf, static_cast<std::size_t>(n));
      const auto space = text.find(' ');
      if (space == std::string_view::npos) continue;
      const std::string id(text.substr(0, space));
      const long steps = std::strtol(buf + space + 1, nullptr, 10);
      if (id == last_id || steps <= 0) continue;
      last_id = id;
      Marks* m = g_marks.load(std::memory_order_acquire);
      if (m == nullptr) continue;
      std::lock_guard<std::mutex> lock(m->mu);
      m->scheduler.capture(steps);
    }
  }).detach();
}

}  // namespace

void step_marks_init(const std::string& dir) {
  const char* plan = std::getenv(record::kSampleEnv);
  std::string error;
  if (plan == nullptr || !record::SamplePlan::parse(plan, g_plan, error) || !g_plan.samples()) return;
  g_dir = dir;
  if (const char* step = std::getenv(record::kStepPatternEnv); step != nullptr && *step != '\0')
    (void)NamePattern::compile(step, "--step", g_step);
  g_roles = std::make_unique<record::RoleMap>(record::RoleMap::defaults());
  if (const char* roles = std::getenv(record::kRolesFileEnv); roles != nullptr && *roles != '\0') {
    record::RoleMap user;
    if (record::RoleMap::load(roles, user).is_ok()) *g_roles = std::move(user);
  }
  g_marks.store(fresh_marks(), std::memory_order_release);
  g_sampling = true;
  if (g_plan.on_demand) poll_captures();
}

void step_marks_after_fork() {
  if (!g_sampling) return;
  Marks* old = g_marks.load(std::memory_order_acquire);
  Marks* m = fresh_marks();
  if (old != nullptr) m->hook = nullptr;  // CUDA does not survive fork: the child's device side is its own
  g_marks.store(m, std::memory_order_release);
}

void classify_step_name(std::uint32_t id, std::string_view name) {
  if (!g_sampling || id >= kLevelIds) return;
  Marks* m = g_marks.load(std::memory_order_acquire);
  if (m == nullptr) return;
  int level = 0;
  const std::optional<Role> role = g_roles->match(name, "");
  if (g_step.found_in(name) || role == Role::step) level = 3;
  else if (record::python_hook_step_name(name)) level = 2;
  else if (std::string k = record::masked_name(name); !k.empty() && ++m->families[k] >= record::kMinFamily) level = 1;
  m->levels[id].store(static_cast<std::uint8_t>(level), std::memory_order_relaxed);
}

void on_range_begin(std::uint32_t name, std::int64_t begin_ns) noexcept {
  if (!g_sampling || name >= kLevelIds) return;
  Marks* m = g_marks.load(std::memory_order_acquire);
  if (m == nullptr) return;
  const int level = m->levels[name].load(std::memory_order_relaxed);
  if (level == 0) return;
  const std::int64_t tid = static_cast<std::int64_t>(syscall(SYS_gettid));
  std::lock_guard<std::mutex> lock(m->mu);
  if (level < m->best_level || (level == m->best_level && tid != m->step_tid)) return;
  if (level > m->best_level) {
    m->best_level = level;
    m->step_tid = tid;
  }
  const std::int64_t index = m->boundaries++;
  edge(*m, index, begin_ns);
}

bool set_window_hook(WindowHook hook, std::int64_t& window) noexcept {
  Marks* m = g_marks.load(std::memory_order_acquire);
  window = 0;
  if (!g_sampling || m == nullptr) return true;  // not sampling: record throughout
  std::lock_guard<std::mutex> lock(m->mu);
  m->hook = hook;
  window = m->window;
  return m->scheduler.recording();
}

bool sampling() noexcept { return g_sampling; }

std::int64_t step_boundaries_seen() noexcept {
  Marks* m = g_marks.load(std::memory_order_acquire);
  if (m == nullptr) return 0;
  std::lock_guard<std::mutex> lock(m->mu);
  return m->boundaries;
}

void time_tick(std::int64_t seconds) noexcept {
  Marks* m = g_marks.load(std::memory_order_acquire);
  if (!g_sampling || m == nullptr) return;
  std::lock_guard<std::mutex> lock(m->mu);
  if (m->boundaries == 0) edge(*m, seconds, now_ns());
}

void lock_marks() noexcept {
  if (Marks* m = g_marks.load(std::memory_order_acquire)) m->mu.lock();
}
void unlock_marks() noexcept {
  if (Marks* m = g_marks.load(std::memory_order_acquire)) m->mu.unlock();
}

}  // namespace stalldx::inject
