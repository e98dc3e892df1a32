#include "stalldx/stats.h"

#include <algorithm>
#include <cmath>

namespace stalldx {

double percentile_sorted(const std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return percentile_sorted(v, p);
}

}  // namespace stalldx
