// The one place that names classes, verdicts and causes (reports, JSON, evaluation read these).
#include <array>

#include "stalldx/diagnose/diagnosis.h"

namespace stalldx::diagnose {

namespace {
struct CauseInfo {
  const char* name;
  StallClass cls;
};
constexpr std::array<CauseInfo, kCauseCount> kCauses = {{
    {"waiting on storage", StallClass::retrieval},
    {"reading files", StallClass::retrieval},
    {"decode CPU-bound", StallClass::decoding},
    {"decode starved of CPU", StallClass::decoding},
    {"reads starved of CPU", StallClass::decoding},
    {"waiting for a batch, producers not recorded", StallClass::unattributed},
    {"pageable copy", StallClass::submission},
    {"per-sample copies", StallClass::submission},
    {"host allocation/pinning inside the step", StallClass::submission},
    {"synchronization inside the step", StallClass::submission},
    {"kernel launch rate", StallClass::submission},
    {"CUDA runtime call", StallClass::submission},
    {"host submission work", StallClass::submission},
    {"consumer starved of CPU", StallClass::submission},
    {"inside a range with no stall role", StallClass::unattributed},
    {"consumer outside any range", StallClass::unattributed},
}};
}  // namespace

const char* class_name(StallClass c) {
  static constexpr std::array<const char*, kClassCount> kNames = {"retrieval", "decoding", "submission", "unattributed"};
  return kNames[static_cast<std::size_t>(c)];
}

std::string verdict_name(Verdict v, bool standin) {
  switch (v) {
    case Verdict::retrieval: return "retrieval";
    case Verdict::decoding: return "decoding";
    case Verdict::submission: return "submission";
    case Verdict::device_bound: return standin ? "consumer-bound" : "device-bound";
    case Verdict::mixed: return "mixed";
    case Verdict::unattributed: return "unattributed";
    case Verdict::no_device_records: return "no-device-records";
    case Verdict::input: return "input";
  }
  return "?";
}

const char* cause_name(Cause c) { return kCauses[static_cast<std::size_t>(c)].name; }
StallClass cause_class(Cause c) { return kCauses[static_cast<std::size_t>(c)].cls; }

}  // namespace stalldx::diagnose
