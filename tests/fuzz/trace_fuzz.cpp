// libFuzzer target: arbitrary text through the trace reader and, when it loads, the diagnosis, the
// advice and the what-if model, and every rendering.
#include <cstdint>
#include <string>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/diagnose/whatif.h"
#include "stalldx/trace_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  stalldx::Trace t;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (stalldx::read_trace_json(text, t).is_ok()) {
    const stalldx::diagnose::Report r = stalldx::diagnose::diagnose(t);
    (void)stalldx::diagnose::report_text(r);
    (void)stalldx::diagnose::report_json(r);
    (void)stalldx::diagnose::report_svg(r);
    const stalldx::diagnose::StageCosts costs = stalldx::diagnose::measure_stage_costs(t);
    (void)stalldx::diagnose::whatif_table(costs, stalldx::diagnose::predict_curve(costs, {1, 2, 4, 16}));
  }
  return 0;
}
