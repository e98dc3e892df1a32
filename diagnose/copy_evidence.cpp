#include "copy_evidence.h"

#include <fmt/format.h>

#include <cmath>

namespace stalldx::diagnose {

// "H2D copy 1.459 ms ends 0.949 ms after 'data_load' closed": a copy is not its host range's duration.
void describe_copies(const TraceIndex& ix, const std::vector<std::size_t>& acts, StepDiagnosis& sd) {
  const Trace& t = ix.trace;
  int shown = 0, copies = 0;
  for (std::size_t i : acts) {
    const DeviceActivity& a = t.activities[i];
    if (!is_memcpy(a.kind)) continue;
    ++copies;
    if (shown >= 2) continue;
    const HostRange* enclosing = nullptr;
    const RuntimeCall* call = nullptr;
    if (auto it = ix.call_by_corr.find(a.correlation); it != ix.call_by_corr.end()) call = it->second;
    if (call)
      for (const HostRange* r : ix.consumer_ranges)
        if (r->role != Role::step && r->begin_ns <= call->begin_ns && r->end_ns >= call->end_ns &&
            (!enclosing || r->end_ns - r->begin_ns < enclosing->end_ns - enclosing->begin_ns))
          enclosing = r;
    std::string where;
    if (enclosing)
      where = fmt::format(", ends {:.3f} ms {} '{}' closed", std::abs(ms(a.end_ns - enclosing->end_ns)),
                          a.end_ns >= enclosing->end_ns ? "after" : "before", t.name(enclosing->name));
    sd.details.push_back(fmt::format("{} {} {:.3f} ms ({:.2f} MB, {}, correlation {}) at {:.3f}–{:.3f} ms{}",
                                     activity_kind_name(a.kind), t.name(a.name), ms(a.end_ns - a.begin_ns), a.bytes / 1e6,
                                     mem_kind_name(a.host_mem), a.correlation, ms(a.begin_ns - t.meta.origin_ns),
                                     ms(a.end_ns - t.meta.origin_ns), where));
    ++shown;
  }
  if (copies > 2) sd.details.push_back(fmt::format("{} copies in this step", copies));
}

}  // namespace stalldx::diagnose
