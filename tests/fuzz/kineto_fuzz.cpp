// libFuzzer: any bytes into the Kineto reader, and whatever it accepts through the diagnosis and its
// renderings. Must never crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <string>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/record/kineto.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const stalldx::record::RoleMap roles = stalldx::record::RoleMap::defaults();
  stalldx::Trace t;
  stalldx::record::KinetoReport rep;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (stalldx::record::read_kineto_json(text, roles, t, rep).is_ok()) {
    const stalldx::diagnose::Report r = stalldx::diagnose::diagnose(t);
    (void)stalldx::diagnose::report_text(r);
    (void)stalldx::diagnose::report_json(r);
  }
  return 0;
}
