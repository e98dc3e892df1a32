// CUDA injection: the driver loads this library when CUDA_INJECTION64_PATH names it and calls
// InitializeInjection at cuInit. We run a stalldx Session with the CUPTI collector alone (NVTX ranges
// come through nvtx_injection.cpp). A marker written at start lets the merger say when a process used
// CUDA but ended before writing (killed).
//
// Full recording: one session from cuInit to exit, written as <pid>.cuda.json at exit.
// Sampled (`record --sample`, step_marks.h): a session per window. A window opens at a step boundary on
// the thread that marks it (CUPTI on before the step's first call). At its close the session is parked
// (draining) for one more step, so that the work its last steps launched, which a device running behind
// the host runs after the close, is still recorded; at the next boundary (WindowAction::release, or any
// other action) a closer thread does the work of closing — flush, drain, CUPTI's detach, writing
// <pid>.cuda.w<N>.json — so the program's step pays only for setting a flag. Between windows CUPTI records nothing; unless
// --no-cupti-detach it is also finalized (no callback at all), the finalize and the re-initialization one
// boundary before the next window made on the closer thread (closer_loop). Only the first and the newest
// kMaxWindowFiles - 1 window files are kept.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "crash_backtrace.h"
#include "part_writer.h"
#include "step_marks.h"
#include "stalldx/cuda.h"
#include "stalldx/profiler.h"
#include "stalldx/record/part_format.h"
#include "stalldx/record/sampling.h"
#include "stalldx/roles.h"
#include "stalldx/trace_io.h"

namespace {

using stalldx::record::WindowAction;

pid_t g_session_pid = 0;  // the process that started CUDA: a forked child inherits the atexit handler
                          // but neither CUDA nor the collector's converter thread

std::string part_path(const std::string& suffix) {
  return std::string(stalldx::inject::record_dir()) + "/" + std::to_string(getpid()) + suffix;
}

stalldx::SessionOptions session_options() {
  stalldx::SessionOptions o;
  o.host = false;
  o.cpu_time = false;
  o.nvtx = false;
  o.cupti = true;
  // Optional records, as `stalldx record` was told (unset: all). The driver API matters: a program's
  // libraries (cuBLAS, cuDNN) launch through it.
  const auto optional = stalldx::record::cuda_records_from_env(std::getenv(stalldx::record::kRecordCudaEnv));
  // Every driver call, or its work calls alone (their ids enabled one by one). A sampled window starts
  // while the program runs, and there the ids enabled one by one gave no records at all: example 2's
  // cuBLASLt kernels (launched through the driver) had no call (H100, 2026-12-06, 550 of 12,334 device
  // records). So a window enables the driver kind, its state queries left out; its cost is the window's.
  o.cupti_driver = optional.driver && (optional.every_call || stalldx::inject::sampling());
  o.cupti_driver_work = optional.driver;
  o.cupti_sync = optional.sync;
  o.cupti_every_call = optional.every_call;
  return o;
}

// `record --sample` (unless --no-cupti-detach): finalize CUPTI between windows (CUPTI's dynamic detach)
// instead of only turning its records off. See kCuptiDetachEnv.
bool g_finalize_between_windows = false;

// Stops `s`, writes its records to `suffix` and deletes it.
void write_and_delete(stalldx::Session* s, const std::string& suffix) {
  s->stop();
  stalldx::Trace& t = s->mutable_trace();
  t.meta.device = "CUDA (the recorded program's)";
  if (g_finalize_between_windows && stalldx::cuda::cuda_graphs_seen())
    t.meta.config[stalldx::record::kCuptiKeptKey] = "it uses CUDA graphs, which a finalize between windows breaks";
  (void)stalldx::write_trace_file(t, part_path(suffix));
  delete s;
}

std::string window_suffix(std::int64_t window) { return ".cuda.w" + std::to_string(window) + ".json"; }

// The recording sessions and the closer thread. Lock order: the marks lock (step_marks.h), then mu.
struct Windows {
  std::mutex mu;
  std::condition_variable wake;
  stalldx::Session* open = nullptr;  // the session of the open window (or the whole run, unsampled)
  std::int64_t open_window = 0;
  std::int64_t first_window = -1;  // the first window recorded in this process (kept with the newest)
  std::pair<stalldx::Session*, std::int64_t> draining{nullptr, 0};  // closed, its device work still arriving
  std::deque<std::pair<stalldx::Session*, std::int64_t>> closing;  // stopped by the closer thread, in order
  bool closer_busy = false, exiting = false;
  bool prepare_wanted = false;          // the next boundary attaches: make CUPTI ready (finalizing only)
  std::atomic<bool> stop_driving{false};  // a window edge or the exit: the closer stops driving a detach
};
Windows g_w;
// How long the closer drives one finalize before leaving it to the program's calls' exits.
constexpr std::int64_t kDriveDetachNs = 3'000'000'000;

// With g_w.mu held.
stalldx::Session* start_session_locked() {
  auto* s = new stalldx::Session;
  if (!stalldx::cuda::install_cupti(*s).is_ok() || !s->start(session_options()).is_ok()) {
    delete s;
    return nullptr;
  }
  if (g_finalize_between_windows) stalldx::cuda::arm_cupti_detach();  // at the boundary, not at the window's end
  return s;
}

// The recorder's own work on the closer thread, written as a range of that thread (role user, NVTX domain
// "stalldx", the window's number as payload): readying CUPTI, closing a window, driving a finalize. A
// program's pause that lines up with one of them shows on the same timeline (names free of step words).
class RecorderWork {
 public:
  RecorderWork(const char* name, std::int64_t window) noexcept : name_(name), window_(window) {
    stalldx::inject::thread_clocks(begin_, cpu_, runq_);
  }
  ~RecorderWork() {
    std::int64_t end = 0, cpu = 0, runq = 0;
    stalldx::inject::thread_clocks(end, cpu, runq);
    recorder_range(stalldx::inject::name_id(name_), window_, begin_, end, cpu - cpu_, runq_ >= 0 && runq >= 0 ? runq - runq_ : -1);
  }
  // One range of the recorder's own work on the calling thread (role user, NVTX domain "stalldx").
  static void recorder_range(std::uint32_t name, std::int64_t window, std::int64_t begin_ns, std::int64_t end_ns, std::int64_t cpu_ns,
                             std::int64_t runq_ns) {
    static const std::uint32_t domain = stalldx::inject::domain_id(stalldx::record::kStalldxDomain);
    stalldx::inject::complete(name, domain, static_cast<std::uint32_t>(stalldx::Role::user) + 1, window, begin_ns, end_ns, cpu_ns, runq_ns);
  }
  RecorderWork(const RecorderWork&) = delete;
  RecorderWork& operator=(const RecorderWork&) = delete;

 private:
  const char* name_;
  std::int64_t window_, begin_ = 0, cpu_ = 0, runq_ = 0;
};

// The closer thread. With finalizing between windows it also takes the heavy ends of CUPTI's life off the
// program's threads: it drives the finalize after a window (its own calls' exits make it, unless a
// program call's exit comes first) and, one boundary before a window, initializes CUPTI again.
void closer_loop() {
  std::unique_lock<std::mutex> lock(g_w.mu);
  for (;;) {
    g_w.wake.wait(lock, [] { return !g_w.closing.empty() || g_w.prepare_wanted || g_w.exiting; });
    // The work below runs with closer_busy set and mu released: no window opens meanwhile (an attach
    // waits for closer_busy to clear, or is refused), and a step boundary's other actions (a window's
    // close, release, prepare) only take mu for a moment. Holding mu through a flush stalled the program:
    // with the host's CPUs all taken the flush waited 60-160 ms for CUPTI's buffers to be converted, and
    // the program's next boundary waited with it (H100, cpu-oversubscribed, 2026-12-06).
    if (g_w.closing.empty() && g_w.prepare_wanted && !g_w.exiting) {
      g_w.prepare_wanted = false;
      g_w.closer_busy = true;
      lock.unlock();
      {
        RecorderWork work("stalldx recorder: CUPTI readied for the next window", -1);
        stalldx::cuda::prepare_cupti();
      }
      lock.lock();
      g_w.closer_busy = false;
      g_w.wake.notify_all();
      continue;
    }
    if (g_w.closing.empty()) return;
    auto [s, window] = g_w.closing.front();
    g_w.closing.pop_front();
    g_w.closer_busy = true;
    lock.unlock();
    {
      RecorderWork work("stalldx recorder: window records flushed", window);
      s->stop();  // flush and drain: CUPTI quiet before any window opens again
      if (g_finalize_between_windows) stalldx::cuda::detach_cupti();
    }
    write_and_delete(s, window_suffix(window));
    if (const std::int64_t old = window - (stalldx::record::kMaxWindowFiles - 1); old > g_w.first_window)  // keep the first and the newest
      ::unlink(part_path(window_suffix(old)).c_str());
    lock.lock();
    g_w.closer_busy = false;
    g_w.wake.notify_all();
    if (g_finalize_between_windows && g_w.closing.empty() && !g_w.prepare_wanted && !g_w.exiting) {
      // Not busy: a window that opens meanwhile does not wait; its start calls the detach off.
      g_w.stop_driving.store(false, std::memory_order_relaxed);
      lock.unlock();
      {
        RecorderWork work("stalldx recorder: CUPTI finalize driven", window);
        (void)stalldx::cuda::drive_cupti_detach(g_w.stop_driving, kDriveDetachNs);
      }
      lock.lock();
    }
  }
}

// step_marks' hook: called with the marks lock held, on the thread that marked the step. An attach that
// may be refused (the window has a later step) returns false, at once, while the closer holds CUPTI
// (stopping a window, readying CUPTI); at the window's last step it waits instead. A program
// step blocked here looked like a long step with no wait (H100, CPU-oversubscribed, an 88 ms stall).
bool on_window(WindowAction action, std::int64_t window, bool may_refuse) {
  if (getpid() != g_session_pid) return true;
  g_w.stop_driving.store(true, std::memory_order_relaxed);  // any edge: the closer stops driving a detach
  std::unique_lock<std::mutex> lock(g_w.mu, std::defer_lock);
  if (action != WindowAction::attach || !may_refuse) lock.lock();
  else if (!lock.try_lock()) return false;
  if (g_w.exiting) return true;
  const bool closed_now = g_w.draining.first != nullptr;
  if (closed_now) {  // any action after a close ends its drain
    g_w.closing.push_back(std::exchange(g_w.draining, {nullptr, 0}));
    g_w.wake.notify_all();
  }
  if (action == WindowAction::release) return true;
  if (action == WindowAction::prepare) {
    if (g_finalize_between_windows && g_w.open == nullptr) {
      g_w.prepare_wanted = true;
      g_w.wake.notify_all();
    }
    return true;
  }
  if (action == WindowAction::attach) {
    // The window that closed at the boundary before (one step between windows) is waited for; an
    // earlier one still closing, or CUPTI being readied, makes this step go unrecorded instead.
    if (may_refuse && !closed_now && (!g_w.closing.empty() || g_w.closer_busy)) return false;
    g_w.wake.wait(lock, [] { return g_w.closing.empty() && !g_w.closer_busy; });
    if (g_w.open == nullptr) {
      RecorderWork work("stalldx recorder: window attached", window);  // on the program's thread, at its boundary
      g_w.open = start_session_locked();
      g_w.open_window = window;
      if (g_w.first_window < 0 && g_w.open != nullptr) g_w.first_window = window;
    }
  } else if (g_w.open != nullptr) {
    g_w.draining = {g_w.open, g_w.open_window};
    g_w.open = nullptr;
  }
  return true;
}

// A finalize, as a range of the thread that made it: the closer's, or a program thread's call exit (its
// step paid for it).
void on_finalize(std::int64_t begin_ns, std::int64_t end_ns, bool by_driver) {
  static const std::uint32_t by_us = stalldx::inject::name_id("stalldx recorder: CUPTI finalized");
  static const std::uint32_t by_program = stalldx::inject::name_id("stalldx recorder: CUPTI finalized at a program call's exit");
  RecorderWork::recorder_range(by_driver ? by_us : by_program, -1, begin_ns, end_ns, -1, -1);
}

std::thread* g_closer = nullptr;  // leaked: joined at exit, never destroyed (exit-time destructors)

void write_cuda_parts() {
  if (getpid() != g_session_pid) return;
  stalldx::inject::lock_marks();  // no window edge from here on
  stalldx::Session* last = nullptr;
  std::int64_t last_window = 0;
  {
    std::lock_guard<std::mutex> lock(g_w.mu);
    g_w.exiting = true;
    g_w.stop_driving.store(true, std::memory_order_relaxed);
    if (g_w.draining.first != nullptr) g_w.closing.push_back(std::exchange(g_w.draining, {nullptr, 0}));
    last = g_w.open;
    last_window = g_w.open_window;
    g_w.open = nullptr;
    g_w.wake.notify_all();
  }
  if (g_closer != nullptr && g_closer->joinable()) g_closer->join();  // finishes the windows it was given
  if (last != nullptr) write_and_delete(last, stalldx::inject::sampling() ? window_suffix(last_window) : ".cuda.json");
  stalldx::inject::unlock_marks();
}

// Windows by time where the program marks no steps: one tick a second since cuInit.
void start_ticker() {
  std::thread([] {
    for (std::int64_t s = 1;; ++s) {
      timespec ts{1, 0};
      while (nanosleep(&ts, &ts) != 0) {
      }
      {
        std::lock_guard<std::mutex> lock(g_w.mu);
        if (g_w.exiting) return;
      }
      if (stalldx::inject::step_boundaries_seen() > 0) return;  // steps mark the windows from now on
      stalldx::inject::time_tick(s);
    }
  }).detach();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  if (!stalldx::inject::enabled() || g_session_pid != 0) return 1;
  const int marker = ::open(part_path(".cuda.started").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (marker >= 0) ::close(marker);
  g_session_pid = getpid();
  stalldx::inject::install_crash_backtrace(&stalldx::cuda::write_detach_state);
  if (stalldx::inject::sampling()) {
    const char* detach = std::getenv(stalldx::record::kCuptiDetachEnv);
    g_finalize_between_windows = detach != nullptr && std::string_view(detach) == "1";
  }
  std::int64_t window = 0;
  const bool open_now = stalldx::inject::set_window_hook(&on_window, window);
  {
    std::lock_guard<std::mutex> lock(g_w.mu);
    if (open_now) g_w.open = start_session_locked();
    g_w.open_window = window;
    if (g_w.open != nullptr) g_w.first_window = window;
  }
  if (stalldx::inject::sampling()) {
    if (g_finalize_between_windows) stalldx::cuda::set_finalize_observer(&on_finalize);
    g_closer = new std::thread(&closer_loop);
    start_ticker();
  }
  std::atexit(&write_cuda_parts);
  return 1;
}
