// The resampler's vertical pass (resample.cpp), in SIMD chosen at run time for the CPU (Highway).
#pragma once

#include <cstdint>

namespace stalldx::pipeline {

// out[j] = Σ_{r < nrows} w[r] · rows[r][j] for j < n. rows[r] has n readable bytes; out has n floats.
// nrows ≥ 1. No allocation.
void weighted_rows(const std::uint8_t* const* rows, const float* w, int nrows, int n, float* out);

}  // namespace stalldx::pipeline
