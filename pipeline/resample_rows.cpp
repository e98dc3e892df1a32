// weighted_rows (resample_rows.h) with Highway's dynamic dispatch: this file is compiled once per x86
// target Highway knows (SSSE3, SSE4, AVX2, AVX-512) and the best one for the running CPU is called. Why
// Highway and not the compiler alone: GCC 12 lowers a uint8 → float vector conversion lane by lane
// (a movzbl + cvtsi2ss per element, measured 7× slower than the AVX2 code here), and target_clones
// cannot pick intrinsics per target; Highway's PromoteTo + ConvertTo are one instruction each.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "resample_rows.cpp"
#include <hwy/foreach_target.h>  // must come before highway.h
#include <hwy/highway.h>

#include "resample_rows.h"

HWY_BEFORE_NAMESPACE();
namespace stalldx::pipeline::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One vector of columns at a time, summed over the rows in registers: one store per column.
void WeightedRows(const std::uint8_t* const* rows, const float* w, int nrows, int n, float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<std::int32_t, decltype(df)> di;
  const hn::Rebind<std::uint8_t, decltype(df)> du8;
  const int lanes = static_cast<int>(hn::Lanes(df));
  int j = 0;
  for (; j + lanes <= n; j += lanes) {
    auto acc = hn::Mul(hn::Set(df, w[0]), hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(du8, rows[0] + j))));
    for (int r = 1; r < nrows; ++r)
      acc = hn::MulAdd(hn::Set(df, w[r]), hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(du8, rows[r] + j))), acc);
    hn::StoreU(acc, df, out + j);
  }
  for (; j < n; ++j) {
    float a = 0;
    for (int r = 0; r < nrows; ++r) a += w[r] * static_cast<float>(rows[r][j]);
    out[j] = a;
  }
}

}  // namespace stalldx::pipeline::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace stalldx::pipeline {
HWY_EXPORT(WeightedRows);
void weighted_rows(const std::uint8_t* const* rows, const float* w, int nrows, int n, float* out) {
  HWY_DYNAMIC_DISPATCH(WeightedRows)(rows, w, nrows, n, out);
}
}  // namespace stalldx::pipeline
#endif
