// Internal to ranks.cpp: putting every rank's times on the first rank's clock. Ranks on one host share
// CLOCK_MONOTONIC; ranks of several hosts (or torch.profiler traces, stamped with each host's wall clock
// from its own base time) may be seconds or hours apart. An all-reduce ends on every rank at the same
// moment (no rank leaves before the last one's data arrived): the median difference of the ends of the
// collectives two ranks both ran is the offset of their clocks, estimated, never silently trusted: the
// report says what was estimated and applied, or that it could not be.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stalldx/diagnose/ranks.h"

namespace stalldx::diagnose {

struct ClockEstimate {
  std::int64_t shift_ns = 0;    // added to this rank's times to put them on the reference's clock
  int steps = 0;                // collectives both ranks ran
  std::int64_t spread_ns = 0;   // the median absolute deviation of the differences
  bool applied = false;         // |shift| beyond the tolerance, and the differences agree: applied
  bool unreliable = false;      // the differences disagree among themselves: nothing applied
};

class RankClocks {
 public:
  // Ends closer than this are the same moment (host ranges of an all-reduce end within microseconds to
  // a millisecond of each other on one host): no shift.
  static constexpr std::int64_t kToleranceNs = 5'000'000;
  // The first rank given is the reference (its collective ends by step are kept: memory grows with the
  // steps, not the ranks). Later ranks get their estimate.
  ClockEstimate align(const RankSteps& rank);
  // The notes to print: one line per rank whose clock was moved, or could not be aligned.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  bool have_reference_ = false;
  int reference_rank_ = -1;
  std::int64_t reference_base_ns_ = 0;
  std::map<std::int64_t, std::int64_t> reference_ends_;  // step -> collective end
  std::vector<std::string> notes_;
};

}  // namespace stalldx::diagnose
