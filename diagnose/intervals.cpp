#include "intervals.h"

#include <algorithm>
#include <numeric>

namespace stalldx::diagnose {

std::vector<Interval> merge_union(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (i.end <= i.begin) continue;
    if (!out.empty() && i.begin <= out.back().end) out.back().end = std::max(out.back().end, i.end);
    else out.push_back(i);
  }
  return out;
}

std::int64_t covered(const std::vector<Interval>& m, Interval w, std::size_t& cursor) {
  while (cursor < m.size() && m[cursor].end <= w.begin) ++cursor;
  std::int64_t sum = 0;
  for (std::size_t i = cursor; i < m.size() && m[i].begin < w.end; ++i)
    sum += std::min(m[i].end, w.end) - std::max(m[i].begin, w.begin);
  return sum;
}

void gaps(const std::vector<Interval>& m, Interval w, std::size_t& cursor, std::vector<Interval>& out) {
  while (cursor < m.size() && m[cursor].end <= w.begin) ++cursor;
  std::int64_t t = w.begin;
  for (std::size_t i = cursor; i < m.size() && m[i].begin < w.end; ++i) {
    if (m[i].begin > t) out.push_back({t, m[i].begin});
    t = std::max(t, m[i].end);
  }
  if (t < w.end) out.push_back({t, w.end});
}

std::vector<Segment> innermost_segments(const std::vector<Interval>& iv, const std::vector<int>& nesting) {
  const auto depth = [&](std::int32_t i) { return nesting.empty() ? 0 : nesting[static_cast<std::size_t>(i)]; };
  std::vector<std::int32_t> order(iv.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    if (iv[a].begin != iv[b].begin) return iv[a].begin < iv[b].begin;
    if (iv[a].end != iv[b].end) return iv[a].end > iv[b].end;  // the longer (outer) first
    if (depth(a) != depth(b)) return depth(a) < depth(b);         // the same span: the inner one last
    return a < b;
  });
  std::vector<Segment> out;
  struct Open { std::int64_t end; std::int32_t id; };
  std::vector<Open> stack;
  std::int64_t t = 0;
  auto emit = [&](std::int64_t b, std::int64_t e, std::int32_t owner) {
    if (e <= b) return;
    if (!out.empty() && out.back().owner == owner && out.back().end == b) out.back().end = e;
    else out.push_back({b, e, owner});
  };
  for (std::int32_t id : order) {
    const Interval& cur = iv[id];
    if (cur.end <= cur.begin) continue;
    while (!stack.empty() && stack.back().end <= cur.begin) {
      emit(t, stack.back().end, stack.back().id);
      t = stack.back().end;
      stack.pop_back();
    }
    if (!stack.empty()) emit(t, cur.begin, stack.back().id);
    else if (t < cur.begin) t = cur.begin;
    t = std::max(t, cur.begin);
    const std::int64_t end = stack.empty() ? cur.end : std::min(cur.end, stack.back().end);
    stack.push_back({end, id});
  }
  while (!stack.empty()) {
    emit(t, stack.back().end, stack.back().id);
    t = std::max(t, stack.back().end);
    stack.pop_back();
  }
  return out;
}

}  // namespace stalldx::diagnose
