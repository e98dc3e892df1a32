#include "stalldx/diagnose/whatif.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <set>

#include "stalldx/diagnose/diagnosis.h"
#include "trace_index.h"
#include "whatif_internal.h"

namespace stalldx::diagnose {

StageCosts measure_stage_costs(const Trace& t, const Thresholds& th) { return measure_stage_costs(t, diagnose(t, th), th); }

StageCosts measure_stage_costs(const Trace& t, const Report& rep, const Thresholds& th) {
  const TraceIndex ix(t, th);
  return stage_costs(t, ix, rep);
}

StageCosts stage_costs(const Trace& t, const TraceIndex& ix, const Report& rep) {
  StageCosts k;
  const RecordedConfig& rc = ix.recorded;
  k.cores = t.meta.host_facts.cores();
  if (rc.known<&RunConfig::read_bandwidth_mbps>()) k.bandwidth_mbps = rc.config.read_bandwidth_mbps;
  // Per sample, over the steady-state batches.
  double r_cpu = 0, r_wall = 0, d_cpu = 0, d_wall = 0, bytes = 0, worker_cpu = 0;
  int reads = 0, decodes = 0, cpu_reads = 0, cpu_decodes = 0;
  std::set<std::uint32_t> workers;
  std::int64_t first = INT64_MAX, last = INT64_MIN;
  for (const auto& [batch, ranges] : ix.producer_by_batch) {
    if (batch < ix.warmup) continue;
    for (const HostRange* r : ranges) {
      workers.insert(r->thread);
      first = std::min(first, r->begin_ns);
      last = std::max(last, r->end_ns);
      const double wall = ms(r->end_ns - r->begin_ns);
      if (r->role == Role::retrieval) {
        ++reads;
        r_wall += wall;
        bytes += static_cast<double>(r->bytes);
        if (r->cpu_ns >= 0) { ++cpu_reads; r_cpu += ms(r->cpu_ns); worker_cpu += ms(r->cpu_ns); }
      } else {
        ++decodes;
        d_wall += wall;
        if (r->cpu_ns >= 0) { ++cpu_decodes; d_cpu += ms(r->cpu_ns); worker_cpu += ms(r->cpu_ns); }
      }
    }
  }
  if (reads == 0 || decodes == 0) {
    k.limits.push_back("no producer records (retrieval/decode ranges per sample): nothing to predict from");
    return k;
  }
  k.samples = decodes;
  k.workers = rc.known<&RunConfig::workers>() ? rc.config.workers : static_cast<int>(workers.size());
  k.batch = rc.known<&RunConfig::batch>() ? rc.config.batch : std::max(1, decodes / std::max(1, rep.summary.steady_steps));
  k.bytes_per_sample = bytes / reads;
  const double rw = r_wall / reads, dw = d_wall / decodes;
  k.read_cpu_ms = cpu_reads ? r_cpu / cpu_reads : rw;
  k.decode_cpu_ms = cpu_decodes ? d_cpu / cpu_decodes : dw;
  k.read_wait_ms = std::max(0.0, rw - k.read_cpu_ms);
  if (!cpu_reads || !cpu_decodes) k.limits.push_back("no thread CPU time: wall time stands in for CPU (contention cannot be told apart)");
  // Per step: device time, and the consumer's own time (its step less the waits for input and device).
  // Device time per step: the busiest stream's work for the step (copies overlap the compute of the
  // step before on their own stream, so the union would overstate the period).
  int steps = 0;
  double busy = 0, own = 0, own_cpu = 0;
  std::map<std::int64_t, double> busy_of;
  std::map<std::int64_t, std::map<std::pair<std::int32_t, std::uint32_t>, double>> per_stream;
  for (const DeviceActivity& a : t.activities)
    if (is_device_work(a.kind) && a.step >= ix.warmup && !(is_memcpy(a.kind) && a.host_mem == MemKind::pageable))
      per_stream[a.step][{a.device, a.stream}] += ms(a.end_ns - a.begin_ns);
  for (const StepDiagnosis& s : rep.steps) {
    if (s.warmup) continue;
    ++steps;
    double most = 0;
    for (const auto& [stream, v] : per_stream[s.step]) most = std::max(most, v);
    busy += most;
    busy_of[s.step] = s.busy_ms;
  }
  // The consumer's waits (for input, for the device) per step, in one pass over its ranges.
  std::map<std::int64_t, std::pair<double, double>> waits_of;  // step -> (wall ms, cpu ms)
  for (const HostRange* r : ix.consumer_ranges)
    if ((r->role == Role::wait_batch || r->role == Role::sync) && r->step >= ix.warmup) {
      auto& [wall, cpu] = waits_of[r->step];
      wall += ms(r->end_ns - r->begin_ns);
      if (r->cpu_ns >= 0) cpu += ms(r->cpu_ns);
    }
  for (const HostRange* st : ix.steps) {
    if (st->step < ix.warmup) continue;
    auto [waits, wait_cpu] = waits_of[st->step];
    // With the host stand-in the device's work runs on the consumer's own lane: not the consumer's time.
    if (ix.standin) waits += busy_of[st->step];
    own += std::max(0.0, ms(st->end_ns - st->begin_ns) - waits);
    own_cpu += st->cpu_ns >= 0 ? std::max(0.0, ms(st->cpu_ns) - wait_cpu) : std::max(0.0, ms(st->end_ns - st->begin_ns) - waits);
  }
  if (steps == 0) {
    k.limits.push_back("no steady-state steps");
    return k;
  }
  k.device_ms_per_step = busy / steps;
  k.consumer_ms_per_step = own / steps;
  k.consumer_cpu_ms_per_step = own_cpu / steps;
  // Workers that were starved while input-bound: the CPU they got is what is available to them.
  const bool input_bound = rep.summary.stall_ms[0] + rep.summary.stall_ms[1] > 0.3 * std::max(1e-9, rep.summary.steady_window_ms);
  if (input_bound && rep.summary.decode_cpu_ratio >= 0 && rep.summary.decode_cpu_ratio < 0.8 && last > first)
    k.worker_cpu_available = worker_cpu / ms(last - first);
  if (k.bandwidth_mbps <= 0)
    k.limits.push_back("storage bandwidth: not measured unless a cap was recorded; reads are assumed to scale with workers");
  k.limits.push_back("more workers than usable cores: modelled as sharing the cores, not the cost of switching between them");
  k.limits.push_back("prefetch depth: not a term (it absorbs variation, not the mean rate); predicted the same for every depth");
  k.valid = true;
  return k;
}

Prediction predict(const StageCosts& k, int w) {
  Prediction p;
  p.workers = w;
  if (!k.valid || w <= 0) return p;
  const double cpu = k.read_cpu_ms + k.decode_cpu_ms;        // ms of CPU per sample
  const double serial = cpu + k.read_wait_ms;                 // one worker, one sample
  const double step_period = std::max(k.device_ms_per_step, k.consumer_ms_per_step);
  // Cores left to the workers: the measured share when they were starved, else the cores less the consumer's.
  double cores = k.cores > 0 ? k.cores : w;
  if (step_period > 0) cores -= std::min(1.0, k.consumer_cpu_ms_per_step / step_period);
  if (k.worker_cpu_available > 0) cores = std::min(cores, k.worker_cpu_available);
  cores = std::max(cores, 0.1);
  const double by_workers = w * 1000.0 / serial;              // samples/s
  const double by_cpu = std::min<double>(w, cores) * 1000.0 / std::max(cpu, 1e-6);
  const double by_bw = k.bandwidth_mbps > 0 && k.bytes_per_sample > 0 ? k.bandwidth_mbps * 1e6 / k.bytes_per_sample : 1e18;
  const double by_step = step_period > 0 ? k.batch * 1000.0 / step_period : 1e18;
  const double rates[] = {by_workers, by_cpu, by_bw, by_step};
  const char* names[] = {"workers (each serves one sample at a time)", "CPU", "bandwidth", k.device_ms_per_step >= k.consumer_ms_per_step ? "device" : "consumer"};
  const auto it = std::min_element(std::begin(rates), std::end(rates));
  p.images_per_second = *it;
  p.bound = names[it - std::begin(rates)];
  return p;
}

std::vector<Prediction> predict_curve(const StageCosts& k, const std::vector<int>& workers) {
  std::vector<Prediction> out;
  for (int w : workers) out.push_back(predict(k, w));
  return out;
}

const Prediction* predicted_knee(const std::vector<Prediction>& curve, double tolerance) {
  double best = 0;
  for (const Prediction& p : curve) best = std::max(best, p.images_per_second);
  const Prediction* knee = nullptr;
  for (const Prediction& p : curve)
    if (p.images_per_second >= (1 - tolerance) * best && (knee == nullptr || p.workers < knee->workers)) knee = &p;
  return knee;
}

std::string whatif_table(const StageCosts& k, const std::vector<Prediction>& curve) {
  std::string out;
  auto o = std::back_inserter(out);
  if (!k.valid) {
    fmt::format_to(o, "what-if: not predicted\n");
    for (const std::string& l : k.limits) fmt::format_to(o, "  {}\n", l);
    return out;
  }
  fmt::format_to(o, "what-if (from {} samples of this run, {} workers, {} usable cores):\n", k.samples, k.workers, k.cores);
  fmt::format_to(o, "  per sample: read {:.2f} ms CPU + {:.2f} ms waiting, decode {:.2f} ms CPU, {:.1f} KB | per step: device {:.2f} ms, "
                    "consumer {:.2f} ms{}\n",
                 k.read_cpu_ms, k.read_wait_ms, k.decode_cpu_ms, k.bytes_per_sample / 1024, k.device_ms_per_step, k.consumer_ms_per_step,
                 k.worker_cpu_available > 0 ? fmt::format(" | workers got {:.1f} cores", k.worker_cpu_available) : "");
  fmt::format_to(o, "  {:>8}  {:>10}  {}\n", "workers", "img/s", "bound by");
  const Prediction* knee = predicted_knee(curve);
  for (const Prediction& p : curve)
    fmt::format_to(o, "  {:>8}  {:>10.0f}  {}{}\n", p.workers, p.images_per_second, p.bound, &p == knee ? "   <- knee" : "");
  for (const std::string& l : k.limits) fmt::format_to(o, "  note: {}\n", l);
  return out;
}

}  // namespace stalldx::diagnose
