// Interval arithmetic on [begin, end) nanosecond intervals: unions, intersections and the innermost-
// range timeline of one thread. Internal to diagnose/.
#pragma once

#include <cstdint>
#include <vector>

namespace stalldx::diagnose {

struct Interval {
  std::int64_t begin = 0, end = 0;
};

// Sorted, disjoint union of `v` (consumed).
std::vector<Interval> merge_union(std::vector<Interval> v);
// Length of the overlap of `window` with a sorted disjoint union; `cursor` speeds up monotone queries.
std::int64_t covered(const std::vector<Interval>& merged, Interval window, std::size_t& cursor);
// The parts of `window` not covered by `merged` (sorted disjoint), appended to `out`.
void gaps(const std::vector<Interval>& merged, Interval window, std::size_t& cursor, std::vector<Interval>& out);

// A piece of one thread's timeline and the innermost interval open during it (-1 = none).
struct Segment {
  std::int64_t begin, end;
  std::int32_t owner;
};
// Flattens possibly nested intervals (index = owner id) into innermost-owner segments. Partial overlaps
// are clipped to their parent, so nothing is counted twice. Intervals with the same begin and end (a
// wait and the consumer's own decode of that batch, timed by one clock read): the one with the higher
// `nesting` (same size as `intervals`; empty = all 0) is the inner one, then the later index — never
// the sort's luck.
std::vector<Segment> innermost_segments(const std::vector<Interval>& intervals, const std::vector<int>& nesting = {});

}  // namespace stalldx::diagnose
