#include <nlohmann/json.hpp>

#include "stalldx/diagnose/diagnosis.h"

namespace stalldx::diagnose {

namespace {
nlohmann::json rows(const std::vector<SummaryRow>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const SummaryRow& r : v)
    a.push_back({{"group", r.group}, {"name", r.name}, {"count", r.count}, {"total_ms", r.total_ms}, {"mean_ms", r.mean_ms},
                 {"p95_ms", r.p95_ms}, {"max_ms", r.max_ms}, {"bytes", r.bytes}});
  return a;
}
}  // namespace

namespace {
std::vector<std::string> recommendation_texts(const RunSummary& sum) {
  std::vector<std::string> out;
  for (const Advised& a : sum.advice) out.push_back(a.text);
  return out;
}
nlohmann::json advice_json(const RunSummary& sum) {  // the same, each with its kind's stable name
  nlohmann::json j = nlohmann::json::array();
  for (const Advised& a : sum.advice) j.push_back({{"kind", advice_name(a.kind)}, {"text", a.text}});
  return j;
}
nlohmann::json step_causes(const StepDiagnosis& s) {
  nlohmann::json j = nlohmann::json::array();
  for (const CauseShare& c : s.causes) j.push_back({{"cause", cause_name(c.cause)}, {"class", class_name(cause_class(c.cause))}, {"ms", c.ms}, {"what", c.what}});
  return j;
}
nlohmann::json cause_json(const RunSummary& sum) {
  nlohmann::json j = nlohmann::json::object();
  for (int c = 0; c < kCauseCount; ++c)
    if (sum.cause_ms[static_cast<std::size_t>(c)] > 0) j[cause_name(static_cast<Cause>(c))] = sum.cause_ms[static_cast<std::size_t>(c)];
  return j;
}
}  // namespace

std::string report_json(const Report& rep) {
  using nlohmann::json;
  const Coverage& c = rep.coverage;
  nlohmann::ordered_json j;  // the headline first, as in every report
  const Headline& h = rep.summary.headline;
  j["headline"] = {{"bound", bound_name(h.bound, c.standin)}, {"text", h.text}, {"after_startup", h.after_startup}, {"evaluation_steps_left_out", h.evaluation_steps},
                   {"share", {{"input", h.input}, {"retrieval", h.retrieval}, {"decoding", h.decoding}, {"unsplit", h.unsplit},
                              {"submission", h.submission}, {"unattributed", h.unattributed}, {"starved", h.starved}, {"busy", h.busy}}}};
  j["device"] = rep.device;
  j["coverage"] = {{"host", c.host}, {"cpu_time", c.cpu_time}, {"nvtx", c.nvtx}, {"cupti", c.cupti},
                   {"device_records", c.device_records}, {"standin", c.standin}, {"dropped_host", c.dropped_host},
                   {"dropped_counters", c.dropped_counters}, {"dropped_device", c.dropped_device},
                   {"unmatched_device", c.unmatched_device}, {"absurd_events", c.absurd_events}, {"repeated_events", c.repeated_events},
                   {"duplicate_correlations", c.duplicate_correlations}, {"unlinked_device", c.unlinked_device},
                   {"zero_length_kernels", c.zero_length_kernels}, {"interrupted", c.interrupted}, {"confidence", confidence_text(c)},
                   {"notes", c.notes}};
  if (c.begins_mid_run)  // a long run's rings: the trace's first step is the run's first_step (null: not known)
    j["coverage"]["begins_mid_run"] = {{"first_step", c.first_step >= 0 ? json(c.first_step) : json(nullptr)}};
  if (c.sampled)
    j["coverage"]["sampling"] = {{"plan", c.sample_plan}, {"device_windows", c.device_windows}, {"steps_in_windows", c.steps_in_windows},
                                 {"steps_carried", c.steps_carried}};
  json steps = json::array();
  for (const StepDiagnosis& s : rep.steps) {
    steps.push_back({{"step", s.step}, {"warmup", s.warmup}, {"window_begin_ms", s.window_begin_ms},
                     {"window_end_ms", s.window_end_ms}, {"window_ms", s.window_ms}, {"busy_ms", s.busy_ms},
                     {"stall_ms", s.stall_ms}, {"verdict", verdict_name(s.verdict, c.standin)},
                     {"top", class_name(s.top)}, {"second", class_name(s.second)},
                     {"class_ms", {{"retrieval", s.class_ms[0]}, {"decoding", s.class_ms[1]}, {"submission", s.class_ms[2]},
                                   {"unattributed", s.class_ms[3]}}},
                     {"evidence", s.evidence}, {"causes", step_causes(s)}, {"details", s.details}, {"next_question", s.next_question},
                     {"device_records", s.device_records}, {"copies", s.copies}, {"basis", step_basis_name(s.basis)}});
    if (s.carried_from >= 0) steps.back()["carried_from"] = s.carried_from;
    if (s.at_window_edge) steps.back()["at_window_edge"] = true;
  }
  j["steps"] = steps;
  const RunSummary& sum = rep.summary;
  json counts = json::object();
  for (auto& [v, n] : sum.verdict_counts) counts[verdict_name(v, rep.coverage.standin)] = n;
  j["summary"] = {{"steady_steps", sum.steady_steps}, {"warmup_steps", sum.warmup_steps}, {"verdict_counts", counts},
                  {"dominant", sum.dominant ? verdict_name(*sum.dominant, rep.coverage.standin) : "none"},
                  {"stall_ms", {{"retrieval", sum.stall_ms[0]}, {"decoding", sum.stall_ms[1]}, {"submission", sum.stall_ms[2]},
                                {"unattributed", sum.stall_ms[3]}}},
                  {"window_ms", sum.steady_window_ms}, {"busy_ms", sum.steady_busy_ms}, {"stall_total_ms", sum.steady_stall_ms},
                  {"recommendations", recommendation_texts(sum)}, {"advice", advice_json(sum)}, {"cause_ms", cause_json(sum)}};
  j["host_summary"] = rows(rep.host_summary);
  j["api_summary"] = rows(rep.api_summary);
  j["device_summary"] = rows(rep.device_summary);
  json bw = json::array();
  for (const BandwidthRow& b : rep.bandwidth)
    bw.push_back({{"kind", b.kind}, {"copies", b.copies}, {"bytes", b.bytes}, {"total_ms", b.total_ms}, {"gbps", b.gbps}});
  j["bandwidth"] = bw;
  j["device_busy_union_ms"] = rep.device_busy_union_ms;
  if (const CollectiveSummary& c = rep.collective; c.ranges > 0)
    j["collective"] = {{"ranges", c.ranges},         {"host_mean_ms", c.host_mean_ms},     {"host_p95_ms", c.host_p95_ms},
                       {"device_records", c.device_records}, {"device_mean_ms", c.device_mean_ms}, {"device_p95_ms", c.device_p95_ms},
                       {"device_bytes_per_range", c.device_bytes_per_range}};
  j["device_busy_sum_ms"] = rep.device_busy_sum_ms;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);  // names are untrusted bytes: invalid UTF-8 becomes U+FFFD
}

}  // namespace stalldx::diagnose
