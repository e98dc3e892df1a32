#include "stalldx/tasks/tune.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>

#include "stalldx/datasets/generator.h"
#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/diagnose/sweep_analysis.h"
#include "stalldx/pipeline/runner.h"

namespace stalldx::tasks {

namespace {
struct Tuner {
  const TuneOptions& o;
  RunConfig base;
  TuneResult& r;
  const StopFlag* stop;
  const std::function<void(const TuneRun&)>& on_run;
  std::map<std::pair<int, int>, double> measured;  // (workers, prefetch) -> img/s

  Status measure(int w, int p, const std::string& why, double& ips) {
    if (auto it = measured.find({w, p}); it != measured.end()) {
      ips = it->second;
      return Status::ok();
    }
    RunConfig c = base;
    c.workers = w;
    c.prefetch = p;
    c.profile = false;
    std::vector<double> v;
    for (int k = 0; k < o.repeat; ++k) {
      pipeline::RunResult run;
      if (Status st = pipeline::run_pipeline(c, run, stop ? &stop->requested : nullptr); !st.is_ok()) return st;
      if (run.interrupted) { r.interrupted = true; return Status::ok(); }
      v.push_back(run.images_per_second);
    }
    std::sort(v.begin(), v.end());
    ips = v[v.size() / 2];
    measured[{w, p}] = ips;
    r.pipeline_runs += o.repeat;
    r.runs.push_back(TuneRun{w, p, false, ips, o.repeat, why});
    if (on_run) on_run(r.runs.back());
    return Status::ok();
  }
};
}  // namespace

Status run_tune(const TuneOptions& o, TuneResult& r, const StopFlag* stop, const std::function<void(const TuneRun&)>& on_run) {
  r = TuneResult{};
  if (Status st = diagnose::validate_list(o.workers, "workers"); !st.is_ok()) return st;
  if (Status st = diagnose::validate_list(o.prefetch, "prefetch"); !st.is_ok()) return st;
  if (o.repeat <= 0 || o.repeat > 100) return Status::invalid(fmt::format("--repeat must be in [1, 100] (got {})", o.repeat));
  std::vector<int> ws = o.workers, ps = o.prefetch;
  std::sort(ws.begin(), ws.end());
  std::sort(ps.begin(), ps.end());
  Tuner t{o, o.base, r, stop, on_run, {}};
  t.base.trace.clear();
  if (t.base.data.empty())
    if (Status st = datasets::ensure_default_dataset(t.base.data, true, stop); !st.is_ok()) return st;
  for (int w : ws)
    for (int p : ps) {
      RunConfig c = t.base;
      c.workers = w;
      c.prefetch = p;
      if (Status st = pipeline::validate(c); !st.is_ok()) return st;
    }

  // 1. One profiled run at the given setting: the per-stage costs.
  RunConfig prof = t.base;
  prof.profile = true;
  pipeline::RunResult pr;
  if (Status st = pipeline::run_pipeline(prof, pr, stop ? &stop->requested : nullptr); !st.is_ok()) return st;
  if (pr.interrupted) { r.interrupted = true; return Status::ok(); }
  r.pipeline_runs += 1;
  r.costs = diagnose::measure_stage_costs(pr.trace);
  const int p0 = std::find(ps.begin(), ps.end(), 2) != ps.end() ? 2 : ps[ps.size() / 2];
  r.predicted = diagnose::predict_curve(r.costs, ws);
  const diagnose::Prediction* knee = r.costs.valid ? diagnose::predicted_knee(r.predicted, o.tolerance) : nullptr;
  r.runs.push_back(TuneRun{prof.workers, prof.prefetch, true, 0, 1,
                           knee ? fmt::format("profiled: per-stage costs; predicted knee {} workers ({:.0f} img/s, bound by {})", knee->workers,
                                              knee->images_per_second, knee->bound)
                                : "profiled: the costs could not be measured; starting from the middle of the list"});
  if (on_run) on_run(r.runs.back());

  // 2. Climb from the predicted knee on measured img/s.
  auto idx_of = [&](int w) { return static_cast<int>(std::find(ws.begin(), ws.end(), w) - ws.begin()); };
  int i = knee ? idx_of(knee->workers) : static_cast<int>(ws.size() / 2);
  double cur = 0;
  if (Status st = t.measure(ws[i], p0, "the predicted knee", cur); !st.is_ok() || r.interrupted) return st;
  // Up while a neighbour beats this point by more than the tolerance; then down while the fewer workers
  // stay within it. Measurements are memoized, and the number of moves is bounded (no oscillation).
  for (std::size_t moves = 0; moves < 2 * ws.size(); ++moves) {
    if (i + 1 < static_cast<int>(ws.size())) {
      double up = 0;
      if (Status st = t.measure(ws[i + 1], p0, fmt::format("does {} workers beat {} by more than {:.0f}%?", ws[i + 1], ws[i], 100 * o.tolerance), up);
          !st.is_ok() || r.interrupted)
        return st;
      if (up > cur * (1 + o.tolerance)) { ++i; cur = up; continue; }
    }
    if (i > 0) {
      double down = 0;
      if (Status st = t.measure(ws[i - 1], p0, fmt::format("are {} workers within {:.0f}% of {}?", ws[i - 1], 100 * o.tolerance, ws[i]), down);
          !st.is_ok() || r.interrupted)
        return st;
      if (down >= cur * (1 - o.tolerance)) { --i; cur = std::max(cur, down); continue; }
    }
    break;
  }
  // 3. Prefetch at the chosen worker count: shallower depths first, then one deeper.
  for (int p : ps) {
    if (p == p0) continue;
    if (p > p0 && p != *std::upper_bound(ps.begin(), ps.end(), p0)) continue;
    double v = 0;
    if (Status st = t.measure(ws[i], p, fmt::format("prefetch {} at {} workers", p, ws[i]), v); !st.is_ok() || r.interrupted) return st;
  }
  // 4. The answer: fewest workers, then shallowest prefetch, within tolerance of the best measured.
  double best = 0;
  for (auto& [k, v] : t.measured) best = std::max(best, v);
  r.best_images_per_second = best;
  for (auto& [k, v] : t.measured)  // ordered by (workers, prefetch)
    if (v >= best * (1 - o.tolerance)) {
      r.workers = k.first;
      r.prefetch = k.second;
      r.images_per_second = v;
      break;
    }
  return Status::ok();
}

std::string tune_text(const TuneResult& r) {
  std::string out;
  auto o = std::back_inserter(out);
  fmt::format_to(o, "stalldx tune\n");
  for (const TuneRun& run : r.runs) {
    if (run.profiled) fmt::format_to(o, "  {:>3} workers, prefetch {}: profiled           {}\n", run.workers, run.prefetch, run.why);
    else fmt::format_to(o, "  {:>3} workers, prefetch {}: {:>7.0f} img/s ({} runs)  {}\n", run.workers, run.prefetch, run.images_per_second, run.runs, run.why);
  }
  out += "\n" + diagnose::whatif_table(r.costs, r.predicted);
  if (r.workers > 0)
    fmt::format_to(o, "\nresult: {} workers, prefetch {}: {:.0f} img/s ({:.1f}% of the best measured, {:.0f}), in {} pipeline runs\n", r.workers,
                   r.prefetch, r.images_per_second, 100 * r.images_per_second / std::max(1e-9, r.best_images_per_second),
                   r.best_images_per_second, r.pipeline_runs);
  return out;
}

}  // namespace stalldx::tasks
