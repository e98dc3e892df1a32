// libFuzzer: any bytes as a torch.profiler file (.json or .json.gz) through the reader that opens it —
// gunzip with its bounds (STALLDX_MAX_INPUT_MB set low here, so a bomb is refused fast) — then the
// Kineto parser, the diagnosis and its renderings. Must never crash, hang or leak.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/record/kineto.h"
#include "stalldx/trace_io.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv(stalldx::kMaxInputEnv, "16", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd_create("kineto.json.gz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  std::string text;
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const bool read = stalldx::read_text_file(path, text).is_ok();
  close(fd);
  if (!read) return 0;
  static const stalldx::record::RoleMap roles = stalldx::record::RoleMap::defaults();
  stalldx::Trace t;
  stalldx::record::KinetoReport rep;
  if (stalldx::record::read_kineto_json(text, roles, t, rep).is_ok()) {
    const stalldx::diagnose::Report r = stalldx::diagnose::diagnose(t);
    (void)stalldx::diagnose::report_text(r);
    (void)stalldx::diagnose::report_json(r);
  }
  return 0;
}
