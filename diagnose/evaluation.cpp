#include "stalldx/diagnose/evaluation.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

namespace stalldx::diagnose {

namespace {
// The verdicts a scenario may induce (device-bound read in either spelling).
bool inducible(const std::string& name, Verdict& out) {
  return verdict_from_name(name, out) && (out == Verdict::retrieval || out == Verdict::decoding || out == Verdict::submission ||
                                          out == Verdict::device_bound || out == Verdict::input);
}
// Names in tables and messages: device-bound spelled one way (scores compare natively run and stand-in runs alike).
std::string name_of(Verdict v) { return verdict_name(v, false); }
}  // namespace

Status Expectation::parse(const std::string& spec, Expectation& out) {
  out = Expectation{};
  out.spec = spec;
  if (Verdict v; inducible(spec, v)) {
    out.on = out.off = v;
    return Status::ok();
  }
  int n = 0, r = 0;
  char a[32] = {0}, b[32] = {0};
  Verdict va, vb;
  if (std::sscanf(spec.c_str(), "alternate:%d:%d=%31[a-z-]:%31[a-z-]", &n, &r, a, b) == 4 && n > 0 && r >= 0 && r < n && inducible(a, va) &&
      inducible(b, vb)) {
    out.period = n;
    out.residue = r;
    out.on = va;
    out.off = vb;
    return Status::ok();
  }
  return Status::invalid(fmt::format("bad expectation '{}': want a class ({}) or alternate:N:R=class:class", spec,
                                     "retrieval, decoding, submission, device-bound, input"));
}

Verdict Expectation::expected(std::int64_t step) const {
  return period > 0 && step % period == residue ? on : period > 0 ? off : on;
}

ScenarioScore score(const std::string& name, const Report& report, const Expectation& e) {
  ScenarioScore s;
  s.name = name;
  s.expected = e.spec;
  for (const StepDiagnosis& d : report.steps) {
    if (d.warmup) continue;
    s.steady++;
    const Verdict want = e.expected(d.step), got = d.verdict;
    s.cells[{want, got}]++;
    if (got == want) s.correct++;
    else s.misses.push_back(fmt::format("step {}: expected {}, got {} ({})", d.step, name_of(want), name_of(got), d.evidence));
  }
  s.accuracy = s.steady ? static_cast<double>(s.correct) / s.steady : 0;
  return s;
}

Agreement agreement(const std::string& name, const Report& native, const Report& recorded) {
  Agreement a;
  a.name = name;
  std::map<std::int64_t, Verdict> by_step;
  for (const StepDiagnosis& d : native.steps)
    if (!d.warmup) by_step[d.step] = d.verdict;
  for (const StepDiagnosis& d : recorded.steps) {
    if (d.warmup) continue;
    auto it = by_step.find(d.step);
    if (it == by_step.end()) continue;
    a.steps++;
    if (d.verdict == it->second) a.same++;
    else a.differ.push_back(fmt::format("step {}: native {}, recorded {}", d.step, name_of(it->second), name_of(d.verdict)));
  }
  a.rate = a.steps ? static_cast<double>(a.same) / a.steps : 0;
  return a;
}

std::string confusion_text(const std::vector<ScenarioScore>& scores) {
  const std::vector<Verdict> rows = {Verdict::retrieval, Verdict::decoding, Verdict::submission, Verdict::device_bound};
  std::map<std::pair<Verdict, Verdict>, int> total;
  std::set<std::string> other;  // verdicts given that no scenario induces, as columns after the rows' (by name)
  for (const ScenarioScore& s : scores)
    for (auto& [k, n] : s.cells) {
      total[k] += n;
      if (std::find(rows.begin(), rows.end(), k.second) == rows.end()) other.insert(name_of(k.second));
    }
  std::vector<Verdict> cols(rows);
  for (const std::string& name : other) {
    Verdict v;
    if (verdict_from_name(name, v)) cols.push_back(v);
  }
  std::string out;
  auto o = std::back_inserter(out);
  fmt::format_to(o, "confusion matrix (steady-state steps; rows: induced class, columns: verdict)\n  {:<14}", "induced \\ got");
  for (const Verdict c : cols) fmt::format_to(o, " {:>13}", name_of(c));
  out += "\n";
  for (const Verdict r : rows) {
    fmt::format_to(o, "  {:<14}", name_of(r));
    for (const Verdict c : cols) {
      auto it = total.find({r, c});
      fmt::format_to(o, " {:>13}", it == total.end() ? 0 : it->second);
    }
    out += "\n";
  }
  fmt::format_to(o, "\nper scenario\n  {:<28} {:<38} {:>7} {:>9}\n", "scenario", "expected", "steps", "accuracy");
  for (const ScenarioScore& s : scores)
    fmt::format_to(o, "  {:<28} {:<38} {:>7} {:>8.0f}%\n", s.name, s.expected, s.steady, 100 * s.accuracy);
  return out;
}

std::string confusion_json(const std::vector<ScenarioScore>& scores) {
  nlohmann::json j = nlohmann::json::array();
  for (const ScenarioScore& s : scores) {
    nlohmann::json cells = nlohmann::json::array();
    for (auto& [k, n] : s.cells) cells.push_back({{"expected", name_of(k.first)}, {"verdict", name_of(k.second)}, {"steps", n}});
    j.push_back({{"scenario", s.name}, {"expected", s.expected}, {"steady_steps", s.steady}, {"correct", s.correct},
                 {"accuracy", s.accuracy}, {"misses", s.misses}, {"cells", cells}});
  }
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);  // names are untrusted bytes: invalid UTF-8 becomes U+FFFD
}

Trace trim_steps(const Trace& t, int steps) {
  const int warmup = warmup_steps(t);
  const std::int64_t first = std::max(0, warmup - 1), last = warmup + steps - 1;  // inclusive
  auto kept = [&](std::int64_t s) { return s >= first && s <= last; };
  std::int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  for (const HostRange& r : t.ranges)
    if (r.role == Role::step && kept(r.step)) { t0 = std::min(t0, r.begin_ns); t1 = std::max(t1, r.end_ns); }
  for (const DeviceActivity& a : t.activities)
    if (kept(a.step)) t1 = std::max(t1, a.end_ns);
  Trace out;
  out.names = t.names;
  out.threads = t.threads;
  out.meta = t.meta;
  // Step ids are kept: the original warm-up count still marks step `first` (when > 0) as warm-up.
  out.meta.config["trimmed"] = fmt::format("steps {}..{} of the recorded run", first, last);
  if (t0 > t1) return out;
  auto in_time = [&](std::int64_t b, std::int64_t e) { return e >= t0 && b <= t1; };
  for (const HostRange& r : t.ranges)
    if ((r.role == Role::step ? kept(r.step) : r.batch >= 0 && (r.role == Role::retrieval || r.role == Role::decode) ? kept(r.batch)
                                                                                                                   : in_time(r.begin_ns, r.end_ns)))
      out.ranges.push_back(r);
  for (const RuntimeCall& c : t.calls)
    if (kept(c.step) || (c.step < 0 && in_time(c.begin_ns, c.end_ns))) out.calls.push_back(c);
  for (const DeviceActivity& a : t.activities)
    if (kept(a.step) || (a.step < 0 && in_time(a.begin_ns, a.end_ns))) out.activities.push_back(a);
  std::vector<CounterSample> counters;
  for (const CounterSample& c : t.counters)
    if (c.ts_ns >= t0 && c.ts_ns <= t1) counters.push_back(c);
  const std::size_t every = counters.size() / 2000 + 1;
  for (std::size_t i = 0; i < counters.size(); i += every) out.counters.push_back(counters[i]);
  out.meta.steps_completed = last + 1;
  return out;
}

}  // namespace stalldx::diagnose
