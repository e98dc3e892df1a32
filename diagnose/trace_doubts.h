// Traces may come from anyone (a file, another tool, a broken recorder): what in one cannot be trusted
// as it stands is found before the diagnosis, set aside where it would mislead, and reported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/trace_model.h"

namespace stalldx::diagnose {

struct TraceDoubts {
  // Removed (counted as dropped): an end before its begin, a duration over a day, or a time more than a
  // day away from the trace's median (a clock of another machine, a corrupt field) — never overflowed.
  std::uint64_t absurd = 0;
  std::uint64_t repeated = 0;               // events identical to an earlier one (a trace merged twice): kept once
  std::uint64_t duplicate_correlations = 0; // calls reusing an earlier call's correlation id: its device work's step is a guess
  std::uint64_t device_work = 0;            // kernels, copies, memsets (after removal)
  std::uint64_t unlinked_device = 0;        // of those, with a correlation id no recorded call has (calls were recorded)
  std::uint64_t zero_length_kernels = 0;    // kernels that begin where they end (counted; they add no busy time)
  // Too much device work linked to no call to say which step or call it served (over 10 %).
  bool links_doubtful() const { return unlinked_device * 10 > device_work && unlinked_device > 0; }
};

// Fills `d`; when events had to be removed, `cleaned` is the trace without them and true is returned
// (false: `t` is used as it is and `cleaned` is untouched). Sorts indices, never the events: O(n log n).
bool check_trace(const Trace& t, TraceDoubts& d, Trace& cleaned);

// Into the report's coverage: the counts, a note for each kind found, and why confidence is lowered.
void note_doubts(const TraceDoubts& d, Coverage& cov, std::vector<std::string>& lowered);

}  // namespace stalldx::diagnose
