#include "recorder.h"
#include "stalldx/thread_clock.h"

#include <algorithm>
#include <charconv>

#include <pthread.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "stalldx/clock.h"
#include <time.h>
#include <unistd.h>


namespace stalldx {

std::int64_t now_ns() noexcept { return monotonic_ns(); }

namespace detail {

namespace {
SessionState g_state;  // constant-initialized where possible; no guard on the hot path
}
SessionState& session_state() { return g_state; }

namespace {
// initial-exec TLS: a direct %fs-relative load on the hot path instead of a __tls_get_addr call (the
// profiler is linked into executables, and into the dlopen'ed injection library, whose 16 bytes here fit the
// static TLS surplus glibc keeps for dlopen).
struct TlsState {
  ThreadBuffer* buffer;
  std::uint64_t generation;
};
__attribute__((tls_model("initial-exec"))) thread_local TlsState tls{nullptr, ~0ull};
thread_local std::string tls_thread_name;

// Coarse roles get CPU time: their ranges are long enough (≥ tens of µs) that two syscalls vanish.
bool samples_cpu(Role role) noexcept {
  return role == Role::retrieval || role == Role::decode || role == Role::wait_batch || role == Role::step ||
         role == Role::sync;
}
}  // namespace

template <typename T>
RecordArray<T>::RecordArray(std::size_t n, bool populate) : bytes(n * sizeof(T)) {
  // Populated up front (at the thread's registration), first-touch page faults stay off the range path.
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : MAP_NORESERVE), -1, 0);
  if (p == MAP_FAILED) {
    bytes = 0;
    return;
  }
  data = static_cast<T*>(p);
}
template <typename T>
RecordArray<T>::~RecordArray() {
  if (data) munmap(data, bytes);
}
template struct RecordArray<RawRange>;
template struct RecordArray<RawCounter>;

ThreadBuffer::~ThreadBuffer() {
  if (schedstat_fd >= 0) close(schedstat_fd);
}

ThreadBuffer* thread_buffer() noexcept {
  SessionState& s = g_state;
  if (!s.recording.load(std::memory_order_relaxed)) return nullptr;
  const std::uint64_t gen = s.generation.load(std::memory_order_acquire);
  if (tls.generation == gen) return tls.buffer;
  // First record of this thread in this session: register (once; takes the lock and allocates).
  auto buf = std::make_shared<ThreadBuffer>();
  buf->os_tid = static_cast<std::int64_t>(syscall(SYS_gettid));
  buf->pthread_id = static_cast<std::uint64_t>(pthread_self());
  buf->name = tls_thread_name.empty() ? "thread" : tls_thread_name;
  if (s.cpu_time) buf->schedstat_fd = open_thread_schedstat();
  buf->range_cap = s.range_cap;
  buf->counter_cap = s.counter_cap;
  buf->ranges = std::make_unique<RecordArray<RawRange>>(buf->range_cap, s.prefault);
  buf->counters = std::make_unique<RecordArray<RawCounter>>(buf->counter_cap, s.prefault);
  if (buf->ranges->data == nullptr || buf->counters->data == nullptr) return nullptr;  // no memory: not recorded
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.generation.load(std::memory_order_relaxed) != gen) return nullptr;  // session changed meanwhile
    s.buffers.push_back(buf);
  }
  tls.buffer = buf.get();
  tls.generation = gen;
  return tls.buffer;
}


void begin_range(OpenRange& r) noexcept {
  r.buffer = thread_buffer();
  if (r.buffer == nullptr) return;
  SessionState& s = g_state;
  if (s.nvtx) {
    if (auto push = s.range_push.load(std::memory_order_relaxed)) push(r.name, r.role, r.ids.batch);
  }
  r.begin_ns = now_ns();
  // CPU samples sit inside the wall interval, so cpu/wall <= 1 up to the CPU clock's granularity.
  if (s.cpu_time && samples_cpu(r.role)) {
    r.runq_begin_ns = thread_runq_ns(r.buffer->schedstat_fd);
    r.cpu_begin_ns = thread_cpu_ns();
  } else {
    r.cpu_begin_ns = -1;
    r.runq_begin_ns = -1;
  }
}

void end_range(OpenRange& r) noexcept {
  ThreadBuffer* buf = r.buffer;
  if (buf == nullptr) return;
  std::int64_t cpu_end = -1, runq_end = -1;
  if (r.cpu_begin_ns >= 0) {
    cpu_end = thread_cpu_ns();
    runq_end = thread_runq_ns(buf->schedstat_fd);
  }
  const std::int64_t end = now_ns();
  SessionState& s = g_state;
  if (s.nvtx) {
    if (auto pop = s.range_pop.load(std::memory_order_relaxed)) pop();
  }
  // Session stopped while the range was open: not part of that trace.
  if (!s.recording.load(std::memory_order_relaxed)) return;
  const std::size_t n = buf->range_count.load(std::memory_order_relaxed);
  if (n >= buf->range_cap) {
    buf->range_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  RawRange& out = (*buf->ranges)[n];
  out.begin_ns = r.begin_ns;
  out.end_ns = end;
  out.step = r.ids.step;
  out.batch = r.ids.batch;
  out.sample = r.ids.sample;
  if (r.cpu_begin_ns >= 0) {
    out.cpu_ns = cpu_end - r.cpu_begin_ns;
    out.runq_frac = kRunqNotSampled;
    if (runq_end >= 0 && r.runq_begin_ns >= 0 && end > r.begin_ns) {
      const double f = static_cast<double>(runq_end - r.runq_begin_ns) / static_cast<double>(end - r.begin_ns);
      out.runq_frac = static_cast<std::uint16_t>(std::clamp(f, 0.0, 1.0) * kRunqScale + 0.5);
    }
  } else {
    out.cpu_ns = -1;
    out.runq_frac = kRunqNotSampled;
  }
  out.bytes = r.bytes;
  out.name = r.name;
  out.role = r.role;
  buf->range_count.store(n + 1, std::memory_order_release);
}

}  // namespace detail

void counter(NameId name, double value) noexcept {
  detail::ThreadBuffer* buf = detail::thread_buffer();
  if (buf == nullptr) return;
  const std::size_t n = buf->counter_count.load(std::memory_order_relaxed);
  if (n >= buf->counter_cap) {
    buf->counter_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  (*buf->counters)[n] = detail::RawCounter{now_ns(), value, name};
  buf->counter_count.store(n + 1, std::memory_order_release);
}

void set_thread_name(std::string_view name) { detail::tls_thread_name.assign(name); }

StepMark::StepMark(std::int64_t step, std::int64_t batch) noexcept {
  static const NameId kStep = register_name("step");
  r_.name = kStep;
  r_.role = Role::step;
  r_.ids = RangeIds{step, batch, -1};
  r_.bytes = 0;
  detail::begin_range(r_);
  if (r_.buffer != nullptr) {
    if (auto push = detail::session_state().step_push.load(std::memory_order_relaxed)) push(step);
  }
}

StepMark::~StepMark() {
  if (r_.buffer != nullptr) {
    if (auto pop = detail::session_state().step_pop.load(std::memory_order_relaxed)) pop();
  }
  detail::end_range(r_);
}

}  // namespace stalldx
