// Durable per-thread range files: a file-backed MAP_SHARED array per thread, so what a process records
// is in the page cache the moment it is stored — _exit(), a crash or SIGKILL lose nothing recorded.
// The file is sparse; blocks are reserved (posix_fallocate) a chunk ahead of the records stored, so a
// store never touches an unbacked page: on a full file system the reservation fails, the thread stops
// recording and counts its drops — a store there would kill the program with SIGBUS.
// fork(): the child's threads re-register under the child's pid on their next range (the parent's
// mappings stay the parent's; the child never writes through them).
#include "part_writer.h"
#include "owned_file.h"
#include "process_files.h"
#include "step_marks.h"
#include "stalldx/clock.h"
#include "stalldx/name_table.h"
#include "stalldx/thread_clock.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <new>
#include <string>

namespace stalldx::inject {

using namespace stalldx::record;

namespace {

std::int64_t now_ns() noexcept { return monotonic_ns(); }

using NameMap = TextMap<std::uint32_t>;

constexpr int kMaxDepth = 256;
struct ThreadState {
  std::uint64_t generation = 0;
  PartHeader* header = nullptr;   // null: registration failed (then nothing is recorded on the thread)
  PartRange* records = nullptr;
  int depth = 0;
  std::uint64_t stack[kMaxDepth];  // sequence numbers of open push ranges (depth beyond kMaxDepth: counted as dropped)
  int overflow = 0;                // pushes beyond kMaxDepth still open
  NameMap* name_cache = nullptr;   // this thread's copy of name ids (no lock after first sight)
  // The program may close or reuse descriptor numbers it did not open (OwnedFile): the ranges file is
  // checked at each reservation, schedstat's number then too (read at every range: a number that became
  // the program's gives a wrong figure until the next check, never a write).
  OwnedFile schedstat;             // /proc/thread-self/schedstat, opened at registration
  int schedstat_fd = -1;           // its number as last checked
  OwnedFile part;                  // the ranges file, kept open to reserve its blocks
  std::uint64_t reserved = 0;      // records whose blocks are reserved (stores below it are safe)
  bool out_of_space = false;       // a reservation failed: nothing more is stored on this thread
  bool ring = false;               // record --sample: a full part wraps, the oldest ranges overwritten
  std::uint64_t capacity = 0;      // records the part holds (part_capacity(), copied at its creation)
};

// The record with sequence number `seq` while it is still in its slot (not overwritten by a ring's wrap).
PartRange* record_at(ThreadState& t, std::uint64_t seq) {
  const std::uint64_t count = __atomic_load_n(&t.header->count, __ATOMIC_RELAXED);
  if (seq >= count || count - seq > t.capacity) return nullptr;
  return &t.records[seq % t.capacity];
}

constexpr std::uint64_t kReserveRecords = 2048;  // per reservation (~150 KB): one syscall per 2048 ranges

// Reserves the blocks of records [t.reserved, t.reserved + kReserveRecords); false when the file
// system has no room (then the thread records no more).
bool reserve_more(ThreadState& t) noexcept {
  if (t.out_of_space || t.reserved >= t.capacity) return false;
  t.schedstat_fd = t.schedstat.get();
  const int fd = t.part.get();
  if (fd < 0) {  // closed by the program and not to be opened again: stop here (drops counted)
    t.out_of_space = true;
    return false;
  }
  const std::uint64_t upto = std::min<std::uint64_t>(t.reserved + kReserveRecords, t.capacity);
  const off_t from = static_cast<off_t>(sizeof(PartHeader) + t.reserved * sizeof(PartRange));
  const off_t len = static_cast<off_t>((upto - t.reserved) * sizeof(PartRange));
  if (posix_fallocate(fd, from, len) != 0) {
    t.out_of_space = true;
    return false;
  }
  t.reserved = upto;
  return true;
}
// Heap-allocated per thread (the TLS slot is one pointer: this library is dlopen'ed into programs and
// may only use a little of the static TLS surplus).
thread_local ThreadState* tls_state = nullptr;

// What tls_state points to once its thread has exited: nothing more is recorded there.
ThreadState g_exited;

// A thread's state goes when it exits (a pthread key's destructor): its descriptors are closed — a program
// that runs many short-lived threads would otherwise hold two more for each until it ran out (600 threads
// of one range each held 1206 here; under `ulimit -n 256` the program could no longer open a file) — and
// its struct freed. Its mapping stays (a range it started may be ended by another thread: end()). A range
// begun by a later destructor on that thread is not recorded.
void close_thread_files(void* state) noexcept {
  auto* t = static_cast<ThreadState*>(state);
  t->schedstat.close();
  t->part.close();
  if (tls_state == t) {
    tls_state = &g_exited;
    delete t->name_cache;
    delete t;
  }
}
pthread_key_t g_exit_key;
bool g_exit_key_made = pthread_key_create(&g_exit_key, &close_thread_files) == 0;

// The calling thread's part for this process, created on its first range (after fork: again).
ThreadState* thread_part() noexcept {
  if (!enabled()) return nullptr;
  const std::uint64_t gen = process_generation();
  ThreadState* t = tls_state;
  if (t == &g_exited) return nullptr;
  if (t != nullptr && t->generation == gen) return t->header ? t : nullptr;
  if (t == nullptr) {
    t = new (std::nothrow) ThreadState;  // one per thread, freed at its exit (close_thread_files)
    if (t == nullptr) return nullptr;
    tls_state = t;
  }
  t->schedstat.close();  // after fork: the parent's thread's files (closed only where still ours)
  t->part.close();
  *t = ThreadState{};  // after fork: the parent's part is not ours
  t->generation = gen;
  try {
    const std::int64_t pid = open_process_files();
    const std::int64_t tid = static_cast<std::int64_t>(syscall(SYS_gettid));
    // <pid>.<tid>.ranges; where an earlier program image of this pid (an exec, a pid reused) left that
    // file, <pid>.<tid>.<n>.ranges — never truncated: its ranges are that image's.
    std::string path = record_directory() + "/" + std::to_string(pid) + "." + std::to_string(tid) + ".ranges";
    for (int image = 1; !t->part.open(path, O_RDWR | O_CREAT | O_EXCL); ++image) {
      if (errno != EEXIST || image > 64) return nullptr;
      path = record_directory() + "/" + std::to_string(pid) + "." + std::to_string(tid) + "." + std::to_string(image) + ".ranges";
    }
    const int fd = t->part.get();
    const std::size_t bytes = sizeof(PartHeader) + std::size_t{part_capacity()} * sizeof(PartRange);
    // The header's blocks first: without them nothing may be stored (the file goes; the thread is not recorded).
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0 || posix_fallocate(fd, 0, sizeof(PartHeader)) != 0) {
      t->part.close();
      ::unlink(path.c_str());
      return nullptr;
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      t->part.close();
      return nullptr;
    }
    t->capacity = part_capacity();
    auto* h = static_cast<PartHeader*>(p);
    h->version = kPartVersion;
    h->record_size = sizeof(PartRange);
    h->pid = pid;
    h->tid = tid;
    h->pthread_id = static_cast<std::uint64_t>(pthread_self());
    t->ring = sampling();  // a long run's recorder keeps the newest ranges
    h->ring = t->ring ? 1 : 0;
    __atomic_store_n(&h->magic, kPartMagic, __ATOMIC_RELEASE);
    t->header = h;
    t->records = reinterpret_cast<PartRange*>(h + 1);
    if (t->schedstat.open("/proc/thread-self/schedstat", O_RDONLY)) t->schedstat_fd = t->schedstat.get();
    t->name_cache = new NameMap;  // per thread and process generation; leaked with the thread (small)
    if (g_exit_key_made) (void)pthread_setspecific(g_exit_key, t);
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
  const bool wraps = n >= t.capacity;
  if ((wraps && !t.ring) || (!wraps && n >= t.reserved && !reserve_more(t))) {
    __atomic_add_fetch(&t.header->dropped, 1, __ATOMIC_RELAXED);
    return nullptr;
  }
  if (wraps) __atomic_add_fetch(&t.header->overwritten, 1, __ATOMIC_RELAXED);
  if (seq != nullptr) *seq = n;
  PartRange& r = t.records[n % t.capacity];
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

std::uint32_t name_id(std::string_view text) noexcept {
  ThreadState* t = thread_part();
  if (t == nullptr) return 0;
  try {
    auto it = t->name_cache->find(text);
    if (it != t->name_cache->end()) return it->second;
    const std::uint32_t id = register_name(text);
    t->name_cache->emplace(std::string(text), id);
    return id;
  } catch (...) {
    return 0;
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
  return reinterpret_cast<std::uint64_t>(r) | (((seq / t->capacity) & 0xFFFF) << 48);
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

void end(std::uint64_t id) noexcept {
  if (id == 0) return;
  // The record lives in a mapping that is never unmapped: valid for the life of the process.
  auto* r = reinterpret_cast<PartRange*>(id & ((std::uint64_t{1} << 48) - 1));
  const auto seq = static_cast<std::uint64_t>(__atomic_load_n(&r->cpu_ns, __ATOMIC_RELAXED));
  if (r->kind != PartRangeKind::start_end || ((seq / part_capacity()) & 0xFFFF) != id >> 48) return;  // overwritten
  __atomic_store_n(&r->end_ns, now_ns(), __ATOMIC_RELEASE);
}

}  // namespace stalldx::inject
