// Durable per-thread range files: a file-backed MAP_SHARED array per thread, so what a process records
// is in the page cache the moment it is stored — _exit(), a crash or SIGKILL lose nothing recorded.
// The file is sparse; blocks are reserved (posix_fallocate) a chunk ahead of the records stored, so a
// store never touches an unbacked page: on a full file system the reservation fails, the thread stops
// recording and counts its drops — a store there would kill the program with SIGBUS.
// fork(): the child's threads re-register under the child's pid on their next range (the parent's
// mappings stay the parent's; the child never writes through them).
#include "part_writer.h"
#include "step_marks.h"
#include "stalldx/clock.h"
#include "stalldx/name_table.h"
#include "stalldx/rank_paths.h"
#include "stalldx/thread_clock.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>

namespace stalldx::inject {

using namespace stalldx::record;

namespace {

std::int64_t now_ns() noexcept { return monotonic_ns(); }


using NameMap = TextMap<std::uint32_t>;

// Process-wide state; reset in the child after fork.
struct ProcessState {
  std::mutex mu;  // names registration and the names file
  NameMap names, domains;
  std::uint32_t next_name = 1, next_domain = 1;
  int names_fd = -1;
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

constexpr int kMaxDepth = 256;
// Records a thread's part holds: kPartRangeCapacity, or less where kPartCapacityEnv says (tests of the
// ring). Set once, at init.
std::uint64_t g_capacity = kPartRangeCapacity;
struct ThreadState {
  std::uint64_t generation = 0;
  PartHeader* header = nullptr;   // null: registration failed (then nothing is recorded on the thread)
  PartRange* records = nullptr;
  int depth = 0;
  std::uint64_t stack[kMaxDepth];  // sequence numbers of open push ranges (depth beyond kMaxDepth: counted as dropped)
  int overflow = 0;                // pushes beyond kMaxDepth still open
  NameMap* name_cache = nullptr;   // this thread's copy of name ids (no lock after first sight)
  int schedstat_fd = -1;           // /proc/thread-self/schedstat, opened at registration
  int part_fd = -1;                // the ranges file, kept open to reserve its blocks
  std::uint64_t reserved = 0;      // records whose blocks are reserved (stores below it are safe)
  bool out_of_space = false;       // a reservation failed: nothing more is stored on this thread
  bool ring = false;               // record --sample: a full part wraps, the oldest ranges overwritten
};

// The record with sequence number `seq` while it is still in its slot (not overwritten by a ring's wrap).
PartRange* record_at(ThreadState& t, std::uint64_t seq) {
  const std::uint64_t count = __atomic_load_n(&t.header->count, __ATOMIC_RELAXED);
  if (seq >= count || count - seq > g_capacity) return nullptr;
  return &t.records[seq % g_capacity];
}

constexpr std::uint64_t kReserveRecords = 2048;  // per reservation (~150 KB): one syscall per 2048 ranges

// Reserves the blocks of records [t.reserved, t.reserved + kReserveRecords); false when the file
// system has no room (then the thread records no more).
bool reserve_more(ThreadState& t) noexcept {
  if (t.out_of_space || t.reserved >= g_capacity) return false;
  const std::uint64_t upto = std::min<std::uint64_t>(t.reserved + kReserveRecords, g_capacity);
  const off_t from = static_cast<off_t>(sizeof(PartHeader) + t.reserved * sizeof(PartRange));
  const off_t len = static_cast<off_t>((upto - t.reserved) * sizeof(PartRange));
  if (posix_fallocate(t.part_fd, from, len) != 0) {
    t.out_of_space = true;
    return false;
  }
  t.reserved = upto;
  return true;
}
// Heap-allocated per thread (the TLS slot is one pointer: this library is dlopen'ed into programs and
// may only use a little of the static TLS surplus).
thread_local ThreadState* tls_state = nullptr;

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

// Opens this process's names file and writes its .proc line; caller holds state().mu.
void open_process_locked(ProcessState& s) {
  s.pid = getpid();
  const std::string base = g_dir + "/" + std::to_string(s.pid);
  s.names_fd = ::open((base + ".names").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
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
    write_line(s.names_fd, 'r', static_cast<std::uint64_t>(r->rank), std::to_string(r->size) + "\t" + r->job);
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
  if (s.names_fd < 0 || s.pid != getpid()) open_process_locked(s);
  return s;
}

std::uint32_t register_text(NameMap ProcessState::*map, std::uint32_t ProcessState::*next, char kind, std::string_view text) {
  std::unique_lock<std::mutex> lock;
  ProcessState& s = process_locked_ready(lock);
  auto it = (s.*map).find(text);
  if (it != (s.*map).end()) return it->second;
  const std::uint32_t id = (s.*next)++;
  (s.*map).emplace(std::string(text), id);
  write_line(s.names_fd, kind, id, text);
  if (kind == 'n') classify_step_name(id, text);  // under the process lock, once per name
  return id;
}

// The calling thread's part for this process, created on its first range (after fork: again).
ThreadState* thread_part() noexcept {
  if (!enabled()) return nullptr;
  ProcessState& s = state();
  const std::uint64_t gen = s.generation.load(std::memory_order_acquire);
  ThreadState* t = tls_state;
  if (t != nullptr && t->generation == gen) return t->header ? t : nullptr;
  if (t == nullptr) {
    t = new (std::nothrow) ThreadState;  // one per thread, leaked with it (a few KB)
    if (t == nullptr) return nullptr;
    tls_state = t;
  }
  if (t->schedstat_fd >= 0) ::close(t->schedstat_fd);  // after fork: the parent's thread's files
  if (t->part_fd >= 0) ::close(t->part_fd);
  *t = ThreadState{};  // after fork: the parent's part is not ours
  t->generation = gen;
  try {
    std::unique_lock<std::mutex> lock;
    process_locked_ready(lock);
    const std::int64_t tid = static_cast<std::int64_t>(syscall(SYS_gettid));
    const std::string path = g_dir + "/" + std::to_string(s.pid) + "." + std::to_string(tid) + ".ranges";
    lock.unlock();
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return nullptr;
    const std::size_t bytes = sizeof(PartHeader) + std::size_t{g_capacity} * sizeof(PartRange);
    // The header's blocks first: without them nothing may be stored (the file goes; the thread is not recorded).
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0 || posix_fallocate(fd, 0, sizeof(PartHeader)) != 0) {
      ::close(fd);
      ::unlink(path.c_str());
      return nullptr;
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      return nullptr;
    }
    t->part_fd = fd;
    auto* h = static_cast<PartHeader*>(p);
    h->version = kPartVersion;
    h->record_size = sizeof(PartRange);
    h->pid = s.pid;
    h->tid = tid;
    h->pthread_id = static_cast<std::uint64_t>(pthread_self());
    t->ring = sampling();  // a long run's recorder keeps the newest ranges
    h->ring = t->ring ? 1 : 0;
    __atomic_store_n(&h->magic, kPartMagic, __ATOMIC_RELEASE);
    t->header = h;
    t->records = reinterpret_cast<PartRange*>(h + 1);
    t->schedstat_fd = open_thread_schedstat();
    t->name_cache = new NameMap;  // per thread and process generation; leaked with the thread (small)
  } catch (...) {
    return nullptr;
  }
  return t;
}

// Appends a record (its sequence number in `seq`). A ring's wrap overwrites the oldest: its begin is
// stored before its end is cleared, so a live reader that meets the slot half written sees an end before
// the begin (rejected) rather than a range open since long ago.
PartRange* append(ThreadState& t, std::uint32_t name, std::uint32_t domain, std::uint32_t category, PartRangeKind kind,
                  std::int64_t payload, std::uint64_t* seq = nullptr) {
  const std::uint64_t n = t.header->count;
  const bool wraps = n >= g_capacity;
  if ((wraps && !t.ring) || (!wraps && n >= t.reserved && !reserve_more(t))) {
    __atomic_add_fetch(&t.header->dropped, 1, __ATOMIC_RELAXED);
    return nullptr;
  }
  if (wraps) __atomic_add_fetch(&t.header->overwritten, 1, __ATOMIC_RELAXED);
  if (seq != nullptr) *seq = n;
  PartRange& r = t.records[n % g_capacity];
  r.begin_ns = now_ns();
  r.name = name;
  r.domain = domain;
  r.category = category;
  r.kind = kind;
  r.payload = payload;
  if (kind == PartRangeKind::push_pop) {
    r.runq_ns = thread_runq_ns(t.schedstat_fd);
    r.cpu_ns = thread_cpu_ns();
  } else {
    r.cpu_ns = r.runq_ns = -1;
  }
  __atomic_store_n(&r.end_ns, std::int64_t{0}, __ATOMIC_RELAXED);
  __atomic_store_n(&t.header->count, n + 1, __ATOMIC_RELEASE);
  return &r;
}

}  // namespace

bool enabled() noexcept {
  std::call_once(g_init, init);
  return g_enabled;
}

const char* record_dir() noexcept { return enabled() ? g_dir.c_str() : ""; }


std::uint32_t name_id(std::string_view text) noexcept {
  ThreadState* t = thread_part();
  if (t == nullptr) return 0;
  try {
    auto it = t->name_cache->find(text);
    if (it != t->name_cache->end()) return it->second;
    const std::uint32_t id = register_text(&ProcessState::names, &ProcessState::next_name, 'n', text);
    t->name_cache->emplace(std::string(text), id);
    return id;
  } catch (...) {
    return 0;
  }
}

std::uint32_t domain_id(std::string_view text) noexcept {
  if (!enabled()) return 0;
  try {
    return register_text(&ProcessState::domains, &ProcessState::next_domain, 'd', text);
  } catch (...) {
    return 0;
  }
}

void name_thread(std::int64_t tid, std::string_view name) noexcept {
  if (!enabled()) return;
  try {
    std::unique_lock<std::mutex> lock;
    ProcessState& s = process_locked_ready(lock);
    write_line(s.names_fd, 't', static_cast<std::uint64_t>(tid), name);
  } catch (...) {
  }
}

void push(std::uint32_t name, std::uint32_t domain, std::uint32_t category, std::int64_t payload) noexcept {
  ThreadState* t = thread_part();
  if (t == nullptr) return;
  if (t->depth >= kMaxDepth) {
    ++t->overflow;
    __atomic_add_fetch(&t->header->dropped, 1, __ATOMIC_RELAXED);
    return;
  }
  std::uint64_t seq = ~0ull;
  PartRange* r = append(*t, name, domain, category, PartRangeKind::push_pop, payload, &seq);
  t->stack[t->depth++] = r ? seq : ~0ull;
  on_range_begin(name, r ? r->begin_ns : now_ns());
}

bool pop() noexcept {
  ThreadState* t = thread_part();
  if (t == nullptr) return true;
  if (t->overflow > 0) {
    --t->overflow;
    return true;
  }
  if (t->depth == 0) {
    __atomic_add_fetch(&t->header->unbalanced_pops, 1, __ATOMIC_RELAXED);
    return false;
  }
  const std::uint64_t seq = t->stack[--t->depth];
  if (seq == ~0ull) return true;
  PartRange* open = record_at(*t, seq);
  if (open == nullptr) return true;  // overwritten by a ring's wrap while open (counted there)
  PartRange& r = *open;
  const std::int64_t cpu = thread_cpu_ns();
  const std::int64_t runq = thread_runq_ns(t->schedstat_fd);
  r.cpu_ns = cpu - r.cpu_ns;
  r.runq_ns = (runq >= 0 && r.runq_ns >= 0) ? runq - r.runq_ns : -1;
  __atomic_store_n(&r.end_ns, now_ns(), __ATOMIC_RELEASE);
  return true;
}

std::uint64_t start(std::uint32_t name, std::uint32_t domain, std::uint32_t category, std::int64_t payload) noexcept {
  ThreadState* t = thread_part();
  if (t == nullptr) return 0;
  std::uint64_t seq = 0;
  PartRange* r = append(*t, name, domain, category, PartRangeKind::start_end, payload, &seq);
  on_range_begin(name, r ? r->begin_ns : now_ns());
  if (r == nullptr) return 0;
  // The id: the record's address (below 2^48) and its wrap number's low 16 bits above it; the record
  // keeps its sequence number in cpu_ns (unused by start/end ranges), so an end() after the slot was
  // overwritten by a ring's wrap is told apart and ignored.
  r->cpu_ns = static_cast<std::int64_t>(seq);
  return reinterpret_cast<std::uint64_t>(r) | (((seq / g_capacity) & 0xFFFF) << 48);
}

void complete(std::uint32_t name, std::uint32_t domain, std::uint32_t category, std::int64_t payload, std::int64_t begin_ns,
              std::int64_t end_ns, std::int64_t cpu_ns, std::int64_t runq_ns) noexcept {
  ThreadState* t = thread_part();
  if (t == nullptr || begin_ns <= 0 || end_ns < begin_ns) return;
  PartRange* r = append(*t, name, domain, category, PartRangeKind::complete, payload);
  if (r == nullptr) return;
  r->begin_ns = begin_ns;
  r->cpu_ns = cpu_ns;
  r->runq_ns = runq_ns;
  __atomic_store_n(&r->end_ns, end_ns, __ATOMIC_RELEASE);
  on_range_begin(name, end_ns);  // the Python loop's iteration, written when it ends: the next one begins there
}

void thread_clocks(std::int64_t& now, std::int64_t& cpu, std::int64_t& runq) noexcept {
  ThreadState* t = thread_part();
  now = now_ns();
  cpu = thread_cpu_ns();
  runq = t != nullptr ? thread_runq_ns(t->schedstat_fd) : -1;
}

void note_python_hook(std::string_view text) noexcept {
  if (!enabled()) return;
  try {
    std::unique_lock<std::mutex> lock;
    ProcessState& s = process_locked_ready(lock);
    write_line(s.names_fd, 'h', 0, text);
  } catch (...) {
  }
}

void end(std::uint64_t id) noexcept {
  if (id == 0) return;
  // The record lives in a mapping that is never unmapped: valid for the life of the process.
  auto* r = reinterpret_cast<PartRange*>(id & ((std::uint64_t{1} << 48) - 1));
  const auto seq = static_cast<std::uint64_t>(__atomic_load_n(&r->cpu_ns, __ATOMIC_RELAXED));
  if (r->kind != PartRangeKind::start_end || ((seq / g_capacity) & 0xFFFF) != id >> 48) return;  // overwritten
  __atomic_store_n(&r->end_ns, now_ns(), __ATOMIC_RELEASE);
}

}  // namespace stalldx::inject
