#include "stalldx/tasks/run_report.h"

#include <fmt/format.h>

#include <iterator>

namespace stalldx::tasks {

using pipeline::RunResult;

std::string rank_line(const pipeline::RunResult& r) {
  const RunConfig& c = r.config;
  return fmt::format("rank {} of {}: {} | {:.0f} img/s over {} steady steps{}{}\n", c.rank, c.world_size, summary_line(c), r.images_per_second,
                     r.step_ms.size(), c.trace.empty() ? "" : " | trace " + c.trace, r.interrupted ? " | interrupted" : "");
}

std::string run_report_text(const RunResult& r) {
  const RunConfig& c = r.config;
  std::string out;
  auto o = std::back_inserter(out);
  fmt::format_to(o, "stalldx run\n  data    {} ({} samples)\n  config  {}\n", c.data, r.dataset_size, summary_line(c));
  fmt::format_to(o, "  device  {}\n", r.device.description);
  if (r.device.standin)
    fmt::format_to(o, "          the GPU step is a HOST STAND-IN: {} ms of host compute per step (--step-ms)\n", c.step_ms);
  else if (r.device.step_reached)
    fmt::format_to(o, "          SYNTHETIC model step: {:.2f} ms of device work per step (calibrated on this device)\n",
                   r.device.calibrated_step_ms);
  else
    fmt::format_to(o, "          SYNTHETIC model step: {:.2f} ms of device work per step — NOT the {} ms asked for (see the note)\n",
                   r.device.calibrated_step_ms, c.device_ms);
  if (!r.device.standin)
    fmt::format_to(o, "  copies  batch H2D {:.1f} GB/s ({} memory) | plain pinned cudaMemcpyAsync reference {:.1f} GB/s\n",
                   r.device.batch_copy_gbps, to_string(c.memory), r.device.reference_copy_gbps);
  if (r.device.verified_batches > 0)
    fmt::format_to(o, "  verify  {} batches checksummed, {} mismatches\n", r.device.verified_batches, r.device.checksum_mismatches);
  for (const std::string& n : r.device.notes) fmt::format_to(o, "  note    {}\n", n);
  fmt::format_to(o, "  result  {:.0f} img/s over {} steady-state steps ({} images, {:.2f} s){}{}\n", r.images_per_second,
                 r.step_ms.size(), r.images, r.seconds, c.profile ? " [profiled]" : " [unprofiled]",
                 r.interrupted ? " [INTERRUPTED]" : "");
  fmt::format_to(o, "  step    p50 {:.2f} ms | p95 {:.2f} ms | max {:.2f} ms\n", r.step_p50, r.step_p95, r.step_max);
  fmt::format_to(o, "  wait    consumer waited for its batch: mean {:.2f} ms | p50 {:.2f} | p95 {:.2f} | max {:.2f} ms per step\n",
                 r.wait_mean, r.wait_p50, r.wait_p95, r.wait_max);
  if (!r.warmup_step_ms.empty()) {
    fmt::format_to(o, "  warmup ");
    for (double ms : r.warmup_step_ms) fmt::format_to(o, " {:.1f}", ms);
    fmt::format_to(o, " ms (not steady state)\n");
  }
  fmt::format_to(o, "  bad     {} of {} images consumed not from their own file | all loaded: {} substituted, {} left zero | {} bad files met {} times",
                 r.bad_images_consumed, r.images + r.warmup_step_ms.size() * static_cast<std::uint64_t>(c.batch), r.bad.substituted,
                 r.bad.unfilled, r.bad.files, r.bad.attempts);
  for (const auto& [k, n] : r.bad.by_kind) fmt::format_to(o, " | {} {}", k, n);
  fmt::format_to(o, "\n");
  for (const std::string& b : r.bad.first) fmt::format_to(o, "          {}\n", b);
  if (c.cold_cache)
    fmt::format_to(o, "  cache   {} reads missed the page cache after their pages were dropped (--cold-cache){}\n", r.cache_misses,
                   r.cache_misses == 0 ? ": this file system keeps no separate page cache (tmpfs?), the knob cost nothing" : "");
  for (const std::string& w : r.index_warnings) fmt::format_to(o, "  index   {}\n", w);
  return out;
}

nlohmann::json run_config_json(const RunConfig& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const RunField& f : run_fields()) {
    const std::string v = f.value(c);
    const std::string key(f.name);
    switch (f.type) {
      case FieldType::integer: j[key] = std::stoll(v); break;
      case FieldType::unsigned_integer: j[key] = std::stoull(v); break;
      case FieldType::real: j[key] = std::stod(v); break;
      case FieldType::boolean: j[key] = v == "true"; break;
      case FieldType::text:
      case FieldType::choice: j[key] = v; break;
    }
  }
  return j;
}

nlohmann::json run_report_json(const RunResult& r) {
  const RunConfig& c = r.config;
  nlohmann::json j;
  j["config"] = run_config_json(c);
  j["device"] = {{"description", r.device.description}, {"standin", r.device.standin},
                 {"calibrated_step_ms", r.device.calibrated_step_ms}, {"step_reached", r.device.step_reached}, {"batch_copy_gbps", r.device.batch_copy_gbps},
                 {"reference_copy_gbps", r.device.reference_copy_gbps}, {"verified_batches", r.device.verified_batches},
                 {"checksum_mismatches", r.device.checksum_mismatches}, {"notes", r.device.notes}};
  if (!r.device_notice.empty()) j["notice"] = r.device_notice;
  j["dataset_size"] = r.dataset_size;
  j["slots"] = r.slots;
  j["images"] = r.images;
  j["seconds"] = r.seconds;
  j["images_per_second"] = r.images_per_second;
  j["steps_completed"] = r.steps_completed;
  j["interrupted"] = r.interrupted;
  j["step_ms"] = {{"p50", r.step_p50}, {"p95", r.step_p95}, {"max", r.step_max}, {"all", r.step_ms}};
  j["wait_ms"] = {{"mean", r.wait_mean}, {"p50", r.wait_p50}, {"p95", r.wait_p95}, {"max", r.wait_max}, {"all", r.wait_ms}};
  j["warmup_step_ms"] = r.warmup_step_ms;
  if (c.cold_cache) j["cache_misses"] = r.cache_misses;
  j["bad_samples"] = {{"images_consumed", r.bad_images_consumed}, {"images", r.bad.images()}, {"substituted", r.bad.substituted}, {"unfilled", r.bad.unfilled},
                      {"files", r.bad.files},   {"attempts", r.bad.attempts},       {"by_kind", r.bad.by_kind},
                      {"first", r.bad.first}};
  return j;
}

}  // namespace stalldx::tasks
