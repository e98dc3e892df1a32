// Terminal report: coverage, per-step table (step, window, stall, verdict, shares, evidence), run
// summary with recommendations, then the summaries.
#include <fmt/format.h>

#include <iterator>

#include "stalldx/diagnose/diagnosis.h"

namespace stalldx::diagnose {

namespace {
void table(std::string& out, const char* title, const std::vector<SummaryRow>& rows, std::size_t limit) {
  if (rows.empty()) return;
  auto o = std::back_inserter(out);
  fmt::format_to(o, "\n{}\n  {:<12} {:<30} {:>8} {:>11} {:>10} {:>10} {:>10}\n", title, "group", "name", "count", "total ms",
                 "mean ms", "p95 ms", "max ms");
  for (std::size_t i = 0; i < rows.size() && i < limit; ++i) {
    const SummaryRow& r = rows[i];
    fmt::format_to(o, "  {:<12} {:<30} {:>8} {:>11.3f} {:>10.3f} {:>10.3f} {:>10.3f}\n", r.group, r.name.substr(0, 30), r.count,
                   r.total_ms, r.mean_ms, r.p95_ms, r.max_ms);
  }
}
}  // namespace

std::string report_text(const Report& rep, bool with_summaries) {
  std::string out;
  auto o = std::back_inserter(out);
  const Coverage& c = rep.coverage;
  fmt::format_to(o, "{}\n", rep.summary.headline.text);
  fmt::format_to(o, "stalldx diagnosis — device: {}\n", rep.device);
  fmt::format_to(o, "  coverage: host {} | cpu time {} | nvtx {} | cupti {} | device records {} | dropped host {} counters {} device {} | unmatched device {}\n",
                 c.host ? "on" : "off", c.cpu_time ? "on" : "off", c.nvtx ? "on" : "off", c.cupti ? "on" : "off",
                 c.device_records ? (c.standin ? "host stand-in" : "yes") : "NONE", c.dropped_host, c.dropped_counters,
                 c.dropped_device, c.unmatched_device);
  fmt::format_to(o, "  confidence: {}\n", confidence_text(c));
  for (const std::string& n : c.notes) fmt::format_to(o, "  note: {}\n", n);
  if (c.sampled)
    fmt::format_to(o, "  device records: {} ({} window{}): {} steps judged on the device's timeline, {} from host records, {} carried\n", c.sample_plan,
                   c.device_windows, c.device_windows == 1 ? "" : "s", c.steps_in_windows,
                   rep.steps.size() - c.steps_in_windows - c.steps_carried, c.steps_carried);
  fmt::format_to(o, "\n  {:>5} {:>10} {:>10} {:>10}  {:<17} {:>5} {:>5} {:>5} {:>5}  {}\n", "step", "window ms", "busy ms", "stall ms",
                 "verdict", "ret%", "dec%", "sub%", "un%", "evidence");
  for (const StepDiagnosis& s : rep.steps) {
    std::string verdict = verdict_name(s.verdict, c.standin);
    if (s.verdict == Verdict::mixed) verdict = fmt::format("mixed({}+{})", class_name(s.top), class_name(s.second)).substr(0, 17);
    const auto pct = [&](int k) { return s.stall_ms > 0 ? 100 * s.class_ms[k] / s.stall_ms : 0.0; };
    fmt::format_to(o, "  {:>5} {:>10.2f} {:>10.2f} {:>10.2f}  {:<17} {:>5.0f} {:>5.0f} {:>5.0f} {:>5.0f}  {}{}{}\n", s.step, s.window_ms,
                   s.busy_ms, s.stall_ms, verdict, pct(0), pct(1), pct(2), pct(3), s.warmup ? "[warm-up] " : "",
                   s.basis == StepBasis::device ? "" : fmt::format("[{}] ", step_basis_name(s.basis)), s.evidence);
  }
  const RunSummary& sum = rep.summary;
  fmt::format_to(o, "\nsteady state: {} steps ({} warm-up reported apart)", sum.steady_steps, sum.warmup_steps);
  for (auto& [v, n] : sum.verdict_counts) fmt::format_to(o, " | {} {}", verdict_name(v, c.standin), n);
  fmt::format_to(o, "\n  stall by class: retrieval {:.1f} ms | decoding {:.1f} ms | submission {:.1f} ms | unattributed {:.1f} ms "
                    "(of {:.1f} ms windows, {:.1f} ms busy)\n",
                 sum.stall_ms[0], sum.stall_ms[1], sum.stall_ms[2], sum.stall_ms[3], sum.steady_window_ms, sum.steady_busy_ms);
  for (const Advised& a : sum.advice) fmt::format_to(o, "  → {}\n", a.text);
  // The steady-state step with the largest stall, in full: what to open in Perfetto first.
  const StepDiagnosis* worst = nullptr;
  for (const StepDiagnosis& s : rep.steps)
    if (!s.warmup && (!worst || s.stall_ms > worst->stall_ms)) worst = &s;
  if (worst && worst->stall_ms > 0) {
    fmt::format_to(o, "\nlargest steady-state stall: step {} ({:.3f}–{:.3f} ms in the trace)\n", worst->step, worst->window_begin_ms,
                   worst->window_end_ms);
    for (const std::string& d : worst->details) fmt::format_to(o, "    {}\n", d);
    if (!worst->next_question.empty()) fmt::format_to(o, "    next: {}\n", worst->next_question);
  }
  if (with_summaries) {
    table(out, "host ranges by role and name", rep.host_summary, 20);
    table(out, "CUDA API calls", rep.api_summary, 15);
    table(out, "device activity by kind and name", rep.device_summary, 15);
    fmt::format_to(o, "\n  device busy (union over streams) {:.3f} ms; plain sum of activity durations {:.3f} ms\n",
                   rep.device_busy_union_ms, rep.device_busy_sum_ms);
    for (const BandwidthRow& b : rep.bandwidth)
      fmt::format_to(o, "  copies {:<24} {:>6} copies {:>10.1f} MB {:>9.3f} ms  {:.1f} GB/s\n", b.kind, b.copies, b.bytes / 1e6,
                     b.total_ms, b.gbps);
    if (const CollectiveSummary& c = rep.collective; c.ranges > 0) {
      fmt::format_to(o, "  all-reduce {} times: host {:.3f} ms mean, p95 {:.3f} (the wait for the other ranks included)", c.ranges,
                     c.host_mean_ms, c.host_p95_ms);
      if (c.device_records > 0)
        fmt::format_to(o, "; on the device {} records, {:.1f} MB a time, {:.3f} ms mean, p95 {:.3f}", c.device_records,
                       c.device_bytes_per_range / 1e6, c.device_mean_ms, c.device_p95_ms);
      out += "\n";
    }
  }
  return out;
}

}  // namespace stalldx::diagnose
