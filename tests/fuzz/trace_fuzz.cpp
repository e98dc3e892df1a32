// libFuzzer target: arbitrary text through the trace reader and, when it loads, the diagnosis.
#include <cstdint>
#include <string>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/trace_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  stalldx::Trace t;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (stalldx::read_trace_json(text, t).is_ok()) {
    const stalldx::diagnose::Report r = stalldx::diagnose::diagnose(t);
    (void)stalldx::diagnose::report_text(r);
  }
  return 0;
}
