// CUDA injection: the driver loads this library when CUDA_INJECTION64_PATH names it and calls
// InitializeInjection at cuInit. We run a stalldx Session with the CUPTI collector alone (NVTX ranges
// come through nvtx_injection.cpp) and write the records as <pid>.cuda.json at exit. A marker written at
// start lets the merger say when a process used CUDA but ended before writing (killed).
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "part_writer.h"
#include "stalldx/cuda.h"
#include "stalldx/profiler.h"
#include "stalldx/trace_io.h"

namespace {

stalldx::Session* g_session = nullptr;  // leaked on purpose: used from the atexit handler
pid_t g_session_pid = 0;                // the process that started it: a forked child inherits the
                                        // handler but neither CUDA nor the collector's converter thread

std::string part_path(const char* suffix) {
  return std::string(stalldx::inject::record_dir()) + "/" + std::to_string(getpid()) + suffix;
}

void write_cuda_part() {
  if (g_session == nullptr || getpid() != g_session_pid) return;
  g_session->stop();
  stalldx::Trace& t = g_session->mutable_trace();
  t.meta.device = "CUDA (the recorded program's)";
  (void)stalldx::write_trace_file(t, part_path(".cuda.json"));
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  if (!stalldx::inject::enabled() || g_session != nullptr) return 1;
  const int marker = ::open(part_path(".cuda.started").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (marker >= 0) ::close(marker);
  auto* session = new stalldx::Session;
  if (!stalldx::cuda::install_cupti(*session).is_ok()) return 1;
  stalldx::SessionOptions o;
  o.host = false;
  o.cpu_time = false;
  o.nvtx = false;
  o.cupti = true;
  // Optional records, as `stalldx record` was told (unset: all). The driver API matters: a program's
  // libraries (cuBLAS, cuDNN) launch through it.
  const auto optional = stalldx::record::cuda_records_from_env(std::getenv(stalldx::record::kRecordCudaEnv));
  o.cupti_driver = optional.driver && optional.every_call;  // every driver call, or its work calls alone
  o.cupti_driver_work = optional.driver;
  o.cupti_sync = optional.sync;
  o.cupti_every_call = optional.every_call;
  if (!session->start(o).is_ok()) return 1;
  g_session = session;
  g_session_pid = getpid();
  std::atexit(&write_cuda_part);
  return 1;
}
