// A CPU program that knows nothing of stalldx: a "training loop" in the main thread and forked worker
// processes that produce its batches, annotated with plain NVTX v3 ranges. `stalldx record` tests run
// it. Each worker reads (sleeps --read-ms: waiting, like storage) and decodes (spins --decode-ms of CPU)
// one sample per batch and writes a byte into a pipe; the main thread waits for --workers bytes per step
// inside "wait_batch", then "computes" (--step-ms spin) inside "step".
//   --steps N --workers N --read-ms X --decode-ms X --step-ms X --exit CODE
//   --unbalanced      two extra pops in the main thread
//   --unclosed        leaves a range open at exit
//   --abort           aborts (SIGABRT) after the loop
//   --name-thread     names the main thread through NVTX
//   --domain          main-thread ranges in an NVTX domain "loop"
//   --announce        prints "nvtx_loop: step N done" on stderr after each step (a test's readiness line)
//   --people-names    names as people write them: the step "iter N", the wait "next_batch", the worker's
//                     "read" and "decode" (no stalldx role name anywhere)
//   --odd-names       also a range whose name is not UTF-8 and holds an ESC sequence (Linux allows both)
//   --two-families    the step "pass N" (no dictionary word) with "part N" around its compute: two numbered
//                     families on one thread, the longer one is the steps
//   --short-threads N before the loop, N threads one after another, each with one range; then prints
//                     "nvtx_loop: N descriptors open" (its /proc/self/fd entries) on stderr
//   --exec-self       first a range "before exec" on the main thread and "earlier image thread" on a
//                     thread that has ended, then exec()s itself with the other arguments (a launcher that
//                     becomes the program: same pid, same main thread id)
//   --close-fds FILE  after the first step, closes every descriptor from 3 up (the recorder's files
//                     included, as a daemon does) but its pipe, opens FILE and /dev/null a few times (their
//                     numbers the recorder's old ones) and writes "step N" lines into FILE after each
//                     later step, with a range of a new name in each (a names-file write after the close)
#include <dirent.h>
#include <fcntl.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
std::int64_t cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
void spin_ms(double ms) {
  const std::int64_t until = cpu_ns() + static_cast<std::int64_t>(ms * 1e6);
  while (cpu_ns() < until) {
  }
}
void sleep_ms(double ms) {
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>((ms - 1000 * static_cast<long>(ms / 1000)) * 1e6)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}
}  // namespace

int main(int argc, char** argv) {
  int steps = 8, workers = 2, exit_code = 0;
  double read_ms = 20, decode_ms = 1, step_ms = 2;
  bool unbalanced = false, unclosed = false, abort_at_end = false, name_thread = false, use_domain = false, announce = false, payload = false,
       people = false, two_families = false, odd_names = false;
  std::string close_fds;
  int short_threads = 0;
  bool exec_self = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? argv[++i] : "0"; };
    if (a == "--steps") steps = std::atoi(next());
    else if (a == "--workers") workers = std::atoi(next());
    else if (a == "--read-ms") read_ms = std::atof(next());
    else if (a == "--decode-ms") decode_ms = std::atof(next());
    else if (a == "--step-ms") step_ms = std::atof(next());
    else if (a == "--exit") exit_code = std::atoi(next());
    else if (a == "--unbalanced") unbalanced = true;
    else if (a == "--unclosed") unclosed = true;
    else if (a == "--abort") abort_at_end = true;
    else if (a == "--name-thread") name_thread = true;
    else if (a == "--domain") use_domain = true;
    else if (a == "--announce") announce = true;
    else if (a == "--payload") payload = true;
    else if (a == "--people-names") people = true;
    else if (a == "--two-families") two_families = true;
    else if (a == "--odd-names") odd_names = true;
    else if (a == "--close-fds") close_fds = next();
    else if (a == "--short-threads") short_threads = std::atoi(next());
    else if (a == "--exec-self") exec_self = true;
  }
  if (exec_self) {
    nvtxRangePushA("before exec");
    pthread_t th;
    if (pthread_create(&th, nullptr, [](void*) -> void* { nvtxRangePushA("earlier image thread"); nvtxRangePop(); return nullptr; }, nullptr) != 0)
      return 6;
    pthread_join(th, nullptr);
    nvtxRangePop();
    std::vector<char*> args;
    for (int i = 0; i < argc; ++i)
      if (std::strcmp(argv[i], "--exec-self") != 0) args.push_back(argv[i]);
    args.push_back(nullptr);
    execv("/proc/self/exe", args.data());
    return 7;
  }
  for (int k = 0; k < short_threads; ++k) {
    pthread_t th;
    if (pthread_create(&th, nullptr, [](void*) -> void* { nvtxRangePushA("short thread work"); nvtxRangePop(); return nullptr; }, nullptr) != 0)
      return 6;
    pthread_join(th, nullptr);
  }
  if (short_threads > 0) {
    int fds = -3;  // ".", ".." and the directory's own descriptor
    if (DIR* d = opendir("/proc/self/fd")) {
      while (readdir(d) != nullptr) ++fds;
      closedir(d);
    }
    std::fprintf(stderr, "nvtx_loop: %d descriptors open\n", fds);
  }
  int ready[2];
  if (pipe(ready) != 0) return 3;
  std::vector<pid_t> kids;
  for (int w = 0; w < workers; ++w) {
    const pid_t pid = fork();
    if (pid == 0) {
      close(ready[0]);
      for (int s = 0; s < steps; ++s) {
        // With --payload the worker's ranges carry the batch they work on (stalldx's convention).
        const auto worker_push = [&](const char* name) {
          if (!payload) return void(nvtxRangePushA(name));
          nvtxEventAttributes_t a{};
          a.version = NVTX_VERSION;
          a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
          a.messageType = NVTX_MESSAGE_TYPE_ASCII;
          a.message.ascii = name;
          a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
          a.payload.llValue = s;
          nvtxRangePushEx(&a);
        };
        worker_push(people ? "read" : "read_file");
        sleep_ms(read_ms);
        nvtxRangePop();
        worker_push("decode");
        spin_ms(decode_ms);
        nvtxRangePop();
        const char b = 1;
        if (write(ready[1], &b, 1) != 1) _exit(4);
      }
      _exit(0);  // like Python's multiprocessing workers: no atexit handlers
    }
    kids.push_back(pid);
  }
  close(ready[1]);
  if (name_thread) nvtxNameOsThreadA(static_cast<uint32_t>(syscall(SYS_gettid)), "trainer");
  nvtxDomainHandle_t domain = use_domain ? nvtxDomainCreateA("loop") : nullptr;
  const auto push = [&](const char* name) {
    if (domain == nullptr) {
      nvtxRangePushA(name);
      return;
    }
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = nvtxDomainRegisterStringA(domain, name);
    nvtxDomainRangePushEx(domain, &a);
  };
  const auto pop = [&] { domain == nullptr ? nvtxRangePop() : nvtxDomainRangePop(domain); };
  char label[32];
  int own = -1;  // --close-fds: the program's own file
  for (int s = 0; s < steps; ++s) {
    std::snprintf(label, sizeof label, two_families ? "pass %d" : "iter %d", s);
    push(people || two_families ? label : "step");
    push(people ? "next_batch" : "wait_batch");
    for (int got = 0; got < workers;) {
      char b;
      const ssize_t n = read(ready[0], &b, 1);
      if (n == 1) ++got;
      else if (n == 0) break;
    }
    pop();
    if (two_families) {
      std::snprintf(label, sizeof label, "part %d", s);
      push(label);
    }
    if (odd_names) {
      nvtxRangePushA("bad \xff\xfe bytes \x1b[31mred\x1b[0m");
      nvtxRangePop();
    }
    spin_ms(step_ms);
    if (two_families) pop();
    pop();
    if (announce) std::fprintf(stderr, "nvtx_loop: step %d done\n", s);
    if (!close_fds.empty() && s == 0) {
      for (int fd = 3; fd < 1024; ++fd)
        if (fd != ready[0]) close(fd);
      own = open(close_fds.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      for (int k = 0; k < 4; ++k) (void)open("/dev/null", O_RDWR);
    } else if (own >= 0) {
      std::snprintf(label, sizeof label, "late range %d", s);  // a new name: the recorder writes its names file
      nvtxRangePushA(label);
      nvtxRangePop();
      const std::string line = "step " + std::to_string(s) + "\n";
      if (write(own, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return 5;
    }
  }
  for (pid_t k : kids) waitpid(k, nullptr, 0);
  if (unbalanced) {
    nvtxRangePop();
    nvtxRangePop();
  }
  if (unclosed) nvtxRangePushA("never_closed");
  if (abort_at_end) std::abort();
  return exit_code;
}
