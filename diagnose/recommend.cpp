// Run summary over steady-state steps and the recommendations that follow from the evidence.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "summaries.h"

namespace stalldx::diagnose {

namespace {
bool any_detail(const Report& rep, const char* needle) {
  for (const StepDiagnosis& s : rep.steps)
    if (!s.warmup)
      for (const std::string& d : s.details)
        if (d.find(needle) != std::string::npos) return true;
  return false;
}
}  // namespace

void build_run_summary(const Trace& t, const Thresholds& th, Report& rep) {
  RunSummary& sum = rep.summary;
  std::map<std::string, int> counts;
  for (const StepDiagnosis& s : rep.steps) {
    if (s.warmup) { sum.warmup_steps++; continue; }
    sum.steady_steps++;
    counts[verdict_name(s.verdict, rep.coverage.standin)]++;
    for (int c = 0; c < kClassCount; ++c) sum.stall_ms[c] += s.class_ms[c];
    sum.steady_window_ms += s.window_ms;
    sum.steady_busy_ms += s.busy_ms;
    sum.steady_stall_ms += s.stall_ms;
  }
  for (auto& kv : counts) sum.verdict_counts.push_back(kv);
  std::sort(sum.verdict_counts.begin(), sum.verdict_counts.end(), [](auto& a, auto& b) { return a.second > b.second; });
  sum.dominant = sum.verdict_counts.empty() ? "none" : sum.verdict_counts.front().first;

  auto& rec = sum.recommendations;
  const RecordedConfig recorded = recorded_config(t);
  const RunConfig& cfg = recorded.config;
  const std::string workers = recorded.present ? std::to_string(cfg.workers) : "?";
  const std::string prefetch = recorded.present ? std::to_string(cfg.prefetch) : "?";
  if (sum.steady_steps == 0) rec.push_back("no steady-state steps were recorded: run more steps than warm-up");
  else if (sum.steady_steps < th.short_capture_steps)
    rec.push_back(fmt::format("this capture is too short to describe steady state ({} steady steps): record more steps", sum.steady_steps));
  const double stall = sum.steady_stall_ms;
  // A class is worth a recommendation when it holds a good share of a stall that matters (>= 2% of the
  // steady-state window), not when it holds most of nothing.
  const bool stall_matters = sum.steady_window_ms > 0 && stall >= 0.02 * sum.steady_window_ms;
  const auto share = [&](StallClass c) { return stall_matters ? sum.stall_ms[static_cast<int>(c)] / stall : 0; };
  if (!rep.coverage.device_records) {
    rec.push_back("collect device records (CUPTI) to judge stalls against the device's timeline");
    return;
  }
  if (sum.dominant == "device-bound" || sum.dominant == "consumer-bound") {
    rec.push_back(fmt::format("{}: the input pipeline keeps up ({:.1f}% of steady-state time idle); more workers or prefetch buy nothing",
                              sum.dominant, sum.steady_window_ms > 0 ? 100 * stall / sum.steady_window_ms : 0));
  }
  if (share(StallClass::retrieval) >= 0.3) {
    rec.push_back(fmt::format("retrieval: {:.0f} ms of stall waiting on storage — faster storage, or more concurrent reads "
                              "(workers {} now) when latency, not bandwidth, is the limit; prefetch ({} now) only absorbs spikes",
                              sum.stall_ms[0], workers, prefetch));
  }
  if (share(StallClass::decoding) >= 0.3) {
    std::string r = fmt::format("decoding: {:.0f} ms of stall on CPU decode — more workers (now {})", sum.stall_ms[1], workers);
    if (!cfg.dct_scaling) r += ", enable DCT-scaled decode";
    if (!cfg.roi_decode) r += ", enable region-of-interest decode";
    if (cfg.output != OutputFormat::uint8_nhwc) r += ", or uint8 output with normalization on the device";
    rec.push_back(r);
  }
  if (share(StallClass::submission) >= 0.3) {
    std::string r = fmt::format("submission: {:.0f} ms of stall in the host's CUDA calls", sum.stall_ms[2]);
    if (any_detail(rep, "pageable")) r += " — pageable copies: allocate batch slots pinned (cudaHostAlloc) once";
    if (any_detail(rep, "per-sample copies")) r += " — per-sample copies: one cudaMemcpyAsync per batch";
    if (any_detail(rep, "allocation/pinning")) r += " — pinning or allocating inside the step: pin the slots once, up front";
    if (any_detail(rep, "ynchroniz")) r += " — synchronization inside the step: let the in-flight limit pace the loop instead";
    rec.push_back(r);
  }
  if (share(StallClass::unattributed) >= 0.3)
    rec.push_back(fmt::format("{:.0f} ms of stall happened outside any wait/submit range: add ranges there before concluding",
                              sum.stall_ms[3]));
  if (rep.coverage.confidence != "high") rec.push_back("confidence " + rep.coverage.confidence);
}

}  // namespace stalldx::diagnose
