// The one place that names classes, verdicts, causes and advice kinds (reports, JSON, evaluation read these).
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
    {"host-paced: the device idled until the loop launched its next work", StallClass::submission},
    {"no CUDA call until the next batch's copy, nothing recorded (its input?)", StallClass::unattributed},
}};
}  // namespace

bool unsplit_input(Cause c) { return c == Cause::input_unsplit || c == Cause::before_batch_copy; }

const char* class_name(StallClass c) {
  static constexpr std::array<const char*, kClassCount> kNames = {"retrieval", "decoding", "submission", "unattributed"};
  return kNames[static_cast<std::size_t>(c)];
}

bool verdict_from_name(std::string_view name, Verdict& out) {
  for (int i = 0; i < kVerdictCount; ++i)
    for (bool standin : {false, true})
      if (verdict_name(static_cast<Verdict>(i), standin) == name) {
        out = static_cast<Verdict>(i);
        return true;
      }
  return false;
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

const char* advice_name(Advice a) {
  switch (a) {  // a kind missing here answers "?": Vocabulary.EveryAdviceKindHasItsOwnName fails
    case Advice::record_longer: return "record_longer";
    case Advice::collect_device_records: return "collect_device_records";
    case Advice::input_keeps_up: return "input_keeps_up";
    case Advice::storage_latency: return "storage_latency";
    case Advice::bandwidth_cap: return "bandwidth_cap";
    case Advice::more_workers: return "more_workers";
    case Advice::oversubscribed: return "oversubscribed";
    case Advice::enable_dct_scaling: return "enable_dct_scaling";
    case Advice::enable_roi_decode: return "enable_roi_decode";
    case Advice::uint8_output: return "uint8_output";
    case Advice::pinned_memory: return "pinned_memory";
    case Advice::batch_copies: return "batch_copies";
    case Advice::pin_once: return "pin_once";
    case Advice::drop_step_sync: return "drop_step_sync";
    case Advice::launch_rate: return "launch_rate";
    case Advice::host_paced: return "host_paced";
    case Advice::name_steps: return "name_steps";
    case Advice::iterator_per_step: return "iterator_per_step";
    case Advice::worker_restarts: return "worker_restarts";
    case Advice::evaluation_in_steps: return "evaluation_in_steps";
    case Advice::add_ranges: return "add_ranges";
    case Advice::split_wait: return "split_wait";
    case Advice::low_confidence: return "low_confidence";
    case Advice::consumer_starved: return "consumer_starved";
    case Advice::bursty_input: return "bursty_input";
    case Advice::input_spikes: return "input_spikes";
    case Advice::startup_in_steady_state: return "startup_in_steady_state";
  }
  return "?";
}

const char* cause_name(Cause c) { return kCauses[static_cast<std::size_t>(c)].name; }
StallClass cause_class(Cause c) { return kCauses[static_cast<std::size_t>(c)].cls; }

}  // namespace stalldx::diagnose

namespace stalldx::diagnose {
const char* bound_name(Bound b, bool standin) {
  switch (b) {
    case Bound::unknown: return "unknown";
    case Bound::input: return "input-bound";
    case Bound::submission: return "submission-bound";
    case Bound::device: return standin ? "consumer-bound" : "device-bound";
    case Bound::unattributed: return "unattributed";
    case Bound::loop: return "loop-bound";
  }
  return "?";
}
}  // namespace stalldx::diagnose

namespace stalldx::diagnose {
std::string confidence_text(const Coverage& c) {
  if (c.confidence == Confidence::high) return "high";
  std::string s = "lowered: ";
  for (std::size_t i = 0; i < c.lowered_because.size(); ++i) s += (i ? "; " : "") + c.lowered_because[i];
  return s;
}
const char* step_basis_name(StepBasis b) {
  switch (b) {
    case StepBasis::device: return "device records";
    case StepBasis::host_records: return "host records";
    case StepBasis::carried: return "carried";
  }
  return "?";
}

}  // namespace stalldx::diagnose
