// Opt-in native stack on a crash of the recorded program (crash_backtrace.cpp).
#pragma once

namespace stalldx::inject {

inline constexpr const char* kCrashBacktraceEnv = "STALLDX_CRASH_BACKTRACE";

// Installs the fault handlers when kCrashBacktraceEnv is "1"; once, at injection. Not thread-safe
// against another install (called from the injection's initializer only). `note`, when given, writes
// more state to the fd after the stack; it must be async-signal-safe.
void install_crash_backtrace(void (*note)(int fd) = nullptr);

}  // namespace stalldx::inject
