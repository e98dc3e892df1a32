// The live line `stalldx record` prints while the program runs (--live, --live-json): over the steps
// that ended since the last line, the time share by class and steps per second — from a snapshot of the
// host records (device windows are read at the end), so someone watching a long run sees the input bound
// when it starts.
#pragma once

#include <cstdint>
#include <string>

#include "stalldx/diagnose/diagnosis.h"

namespace stalldx::diagnose {

struct LiveLine {
  double elapsed_s = 0;                  // since the recording started
  std::int64_t first_step = -1, last_step = -1;
  int steps = 0;                         // steps that ended in the interval (0: none, the loop is elsewhere)
  double steps_per_s = 0;
  Headline headline;                     // shares of those steps' time (host records: busy unknown)
  std::size_t device_windows = 0;        // windows opened so far (sampled recording)
};

// From `snapshot` (the parts merged so far, host records, ranges still open ending at `now_ns`): the
// steps that ended after `since_ns` and before `now_ns` (a step still running is left for the next
// line). Steps are numbered from `first_step` on (a snapshot starts late: its own numbering does not
// count the steps before it). Times are CLOCK_MONOTONIC ns.
LiveLine live_line(const Trace& snapshot, std::int64_t since_ns, std::int64_t now_ns, std::int64_t started_ns, std::int64_t first_step);
std::string live_text(const LiveLine& line);   // one line, no newline
std::string live_json(const LiveLine& line);   // one JSON object, no newline

}  // namespace stalldx::diagnose
