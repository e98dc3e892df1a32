// Which ranges are a recorded program's steps, when nobody said so. In order of evidence (DESIGN.md
// "Steps without names"):
//   1. named: ranges whose role is `step` (--step, a roles file, the built-in words: "step 12", ...);
//   2. numbered family: ranges on one thread whose names are equal once numbers are masked ("iter 7",
//      "Iteration 3", "train_step[5]"), at least kMinFamily of them, none overlapping another — on the
//      thread that launches most device work when it has one, the longest family in total time;
//   3. Python loop: the Python hook's iterations over a DataLoader (part_format.h kPythonLoopStepName), or
//      of a loop without one, backward pass to backward pass (kPythonBackwardStepName);
//   4. CUDA period: no usable ranges at all — one step per batch-sized host-to-device copy issued by the
//      thread that launches most device work, else per launch of the kernel that recurs once a period;
//      lowered confidence, since nothing the program said marks the step.
// The chosen ranges get Role::step (the other candidates keep theirs); rule 4 adds ranges of its own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stalldx/trace_model.h"

namespace stalldx::record {

enum class StepRule : std::uint8_t { none, named, numbered_family, python_loop, cuda_period };
inline constexpr int kMinFamily = 5;
// Trace metadata: the size in bytes of the host-to-device copy that marks each step, when rule 4 found
// the steps by it (absent otherwise). `diagnose` reads the idle before such a copy as the loop getting its
// next batch.
inline constexpr const char* kStepsBatchCopyBytesKey = "steps_batch_copy_bytes";
// "iter 12" -> "iter #": the name with each run of digits masked (the family it belongs to); empty when
// it has no digit.
std::string masked_name(std::string_view name);
// Its stable name ("named", "numbered_family", "python_loop", "cuda_period", "none"): the trace's
// metadata key steps_rule holds it, so `diagnose` of the file says the same.
const char* step_rule_name(StepRule rule);
bool step_rule_from_name(std::string_view name, StepRule& out);

struct StepEvidence {
  StepRule rule = StepRule::none;
  std::string found;                      // what was chosen, for people: "'iter #' on thread main: 40 ranges"
  std::vector<std::string> passed_over;   // other candidates and why they lost
  std::string how_to_override;            // the option that overrides the choice
};

// Decides, marks the steps in `t` (before assign_steps) and records the evidence in t.meta.config
// (steps_rule, steps_found_by).
StepEvidence infer_steps(Trace& t);

}  // namespace stalldx::record
