// The one definition of a percentile in stalldx (run reports, summaries, sweeps): linear interpolation
// between closest ranks (numpy's default), p in [0, 100]; 0 for no values.
#pragma once

#include <vector>

namespace stalldx {

double percentile(std::vector<double> values, double p);
// The same on values already sorted ascending (no copy).
double percentile_sorted(const std::vector<double>& sorted, double p);

}  // namespace stalldx
