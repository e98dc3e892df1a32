// Where a recorded program crashed: with STALLDX_CRASH_BACKTRACE=1 in its environment, a fault
// (SIGSEGV, SIGBUS, SIGILL, SIGFPE) first writes the faulting thread's native stack to stderr — library
// and offset per frame, enough to tell CUPTI from the driver, the program or us — then goes on to the
// handler the program had (Python's faulthandler, say) or the default action: the same exit status and
// core as without us. Off by default: it changes nothing a program sees unless asked.
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "crash_backtrace.h"

namespace stalldx::inject {

namespace {

constexpr int kFaults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
struct sigaction g_previous[sizeof kFaults / sizeof kFaults[0]];
void (*g_note)(int fd) = nullptr;

void on_fault(int sig, siginfo_t* info, void*) {
  static const char head[] = "stalldx: fatal signal in the recorded program; the faulting thread's stack:\n";
  (void)!::write(STDERR_FILENO, head, sizeof head - 1);
  void* frames[64];
  ::backtrace_symbols_fd(frames, ::backtrace(frames, 64), STDERR_FILENO);
  if (g_note != nullptr) g_note(STDERR_FILENO);
  for (std::size_t i = 0; i < sizeof kFaults / sizeof kFaults[0]; ++i)
    if (kFaults[i] == sig) ::sigaction(sig, &g_previous[i], nullptr);
  // A fault repeats when this returns and reaches the restored handler; a signal sent by kill does not.
  if (info == nullptr || info->si_code <= 0) ::raise(sig);
}

}  // namespace

void install_crash_backtrace(void (*note)(int fd)) {
  const char* v = std::getenv(kCrashBacktraceEnv);
  if (v == nullptr || std::string_view(v) != "1") return;
  g_note = note;
  void* warm[1];
  ::backtrace(warm, 1);  // loads the unwinder now: the first call may allocate, never in a handler
  struct sigaction sa {};
  sa.sa_sigaction = &on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (std::size_t i = 0; i < sizeof kFaults / sizeof kFaults[0]; ++i) ::sigaction(kFaults[i], &sa, &g_previous[i]);
}

}  // namespace stalldx::inject
