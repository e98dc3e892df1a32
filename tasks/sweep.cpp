#include "stalldx/tasks/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "stalldx/datasets/generator.h"
#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/output_file.h"
#include "stalldx/pipeline/runner.h"
#include "stalldx/trace_io.h"

namespace fs = std::filesystem;

namespace stalldx::tasks {


std::string sweep_signature(const RunConfig& base, int repeat) {
  return fmt::format("{} repeat={}", comparable_signature(base), repeat);
}

namespace {

// The lists, --repeat and every point's config checked before any run; the default set made if needed.
Status check_sweep(const SweepOptions& o, RunConfig& base, const StopFlag* stop) {
  if (Status st = diagnose::validate_list(o.workers, "workers"); !st.is_ok()) return st;
  if (Status st = diagnose::validate_list(o.prefetch, "prefetch"); !st.is_ok()) return st;
  if (o.repeat <= 0 || o.repeat > 1000) return Status::invalid(fmt::format("--repeat must be in [1, 1000] (got {})", o.repeat));
  base = o.base;
  base.trace.clear();
  for (int w : o.workers)
    for (int p : o.prefetch) {
      RunConfig c = base;
      c.workers = w;
      c.prefetch = p;
      if (Status st = pipeline::validate(c); !st.is_ok()) return st;
    }
  if (base.data.empty())
    if (Status st = datasets::ensure_default_dataset(base.data, true, stop); !st.is_ok()) return st;
  return Status::ok();
}

// --out made ready: resuming, the points already in sweep.csv (its signature must match this sweep's);
// otherwise a fresh signature and header.
Status open_sweep(const SweepOptions& o, const RunConfig& base, std::vector<diagnose::SweepPoint>& points, SweepResult& result) {
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) return Status::io(fmt::format("cannot create sweep folder '{}': {}", o.out, ec.message()));
  const std::string csv = o.out + "/sweep.csv", sig_path = o.out + "/sweep.config";
  const std::string sig = sweep_signature(base, o.repeat);
  if (!o.resume || !fs::exists(csv)) {
    if (Status st = write_file_atomic(sig_path, sig + "\n"); !st.is_ok()) return st;
    return write_file_atomic(csv, diagnose::sweep_csv_header());
  }
  std::string recorded, rows;
  if (Status st = read_text_file(sig_path, recorded); !st.is_ok())
    return Status::invalid(fmt::format("--resume: {} is missing, so the points in {} cannot be checked; use another --out", sig_path, csv));
  if (recorded != sig + "\n")
    return Status::invalid(fmt::format("--resume with different options than {} records; use another --out\n  recorded: {}  now:      {}",
                                       sig_path, recorded, sig + "\n"));
  if (Status st = read_text_file(csv, rows); !st.is_ok()) return st;
  int skipped = 0;
  points = diagnose::parse_sweep_csv(rows, skipped);
  result.resumed = points.size();
  result.malformed_rows = static_cast<std::size_t>(skipped);
  return Status::ok();
}

// One point: --repeat unprofiled runs (the throughput, their median), then one profiled run (the verdicts,
// never the throughput). `interrupted`: a run was stopped, `pt` is incomplete.
Status measure_point(const SweepOptions& o, RunConfig c, const std::atomic<bool>* stop_flag, diagnose::SweepPoint& pt, SweepResult& result,
                     bool& interrupted) {
  c.workers = pt.workers;
  c.prefetch = pt.prefetch;
  std::vector<pipeline::RunResult> runs;
  for (int k = 0; k < o.repeat; ++k) {
    c.profile = false;
    pipeline::RunResult r;
    if (Status st = pipeline::run_pipeline(c, r, stop_flag); !st.is_ok()) return st;
    if ((interrupted = r.interrupted)) return Status::ok();
    pt.repeats.push_back(r.images_per_second);
    runs.push_back(std::move(r));
  }
  std::sort(runs.begin(), runs.end(), [](const auto& x, const auto& y) { return x.images_per_second < y.images_per_second; });
  const pipeline::RunResult& med = runs[runs.size() / 2];
  pt.images_per_second = med.images_per_second;
  pt.step_p50 = med.step_p50;
  pt.step_p95 = med.step_p95;
  c.profile = true;
  pipeline::RunResult prof;
  if (Status st = pipeline::run_pipeline(c, prof, stop_flag); !st.is_ok()) return st;
  if ((interrupted = prof.interrupted)) return Status::ok();
  const diagnose::Report rep = diagnose::diagnose(prof.trace);
  if (pt.workers >= result.profiled_workers) {  // the most workers: the what-if's best-measured case (H200: 4 % median error)
    const diagnose::StageCosts costs = diagnose::measure_stage_costs(prof.trace);
    if (costs.valid) {
      result.predicted = diagnose::predict_curve(costs, o.workers);
      result.profiled_workers = pt.workers;
    }
  }
  pt.dominant = rep.summary.dominant;
  pt.standin = rep.coverage.standin;
  for (auto& [v, n] : rep.summary.verdict_counts) pt.verdicts[v] = n;
  pt.stall_retrieval = rep.summary.stall_ms[0];
  pt.stall_decoding = rep.summary.stall_ms[1];
  pt.stall_submission = rep.summary.stall_ms[2];
  pt.stall_unattributed = rep.summary.stall_ms[3];
  return Status::ok();
}

// The points sorted, the recommendation, sweep.json / .svg / .html.
Status finish_sweep(const SweepOptions& o, std::vector<diagnose::SweepPoint> points, SweepResult& result) {
  std::sort(points.begin(), points.end(), [](const auto& x, const auto& y) { return std::tie(x.workers, x.prefetch) < std::tie(y.workers, y.prefetch); });
  result.points = std::move(points);
  result.recommendation = diagnose::recommend(result.points);
  if (Status st = write_file_atomic(o.out + "/sweep.json", diagnose::sweep_json(result.points, result.recommendation)); !st.is_ok()) return st;
  if (Status st = write_file_atomic(o.out + "/sweep.svg", diagnose::sweep_svg(result.points, result.recommendation)); !st.is_ok()) return st;
  if (Status st = write_file_atomic(o.out + "/sweep.html", diagnose::sweep_html(result.points, result.recommendation, result.predicted, result.profiled_workers));
      !st.is_ok())
    return st;
  result.files = {o.out + "/sweep.csv", o.out + "/sweep.json", o.out + "/sweep.svg"};
  return Status::ok();
}

}  // namespace

Status run_sweep(const SweepOptions& o, SweepResult& result, const StopFlag* stop,
                 const std::function<void(const SweepProgress&)>& progress) {
  result = SweepResult{};
  RunConfig base;
  if (Status st = check_sweep(o, base, stop); !st.is_ok()) return st;
  std::vector<diagnose::SweepPoint> points;
  if (Status st = open_sweep(o, base, points, result); !st.is_ok()) return st;
  std::vector<std::pair<int, int>> todo;
  for (int w : o.workers)
    for (int p : o.prefetch)
      if (std::none_of(points.begin(), points.end(), [&](const auto& x) { return x.workers == w && x.prefetch == p; })) todo.emplace_back(w, p);
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < todo.size(); ++i) {
    diagnose::SweepPoint pt;
    pt.workers = todo[i].first;
    pt.prefetch = todo[i].second;
    bool interrupted = false;
    if (Status st = measure_point(o, base, stop ? &stop->requested : nullptr, pt, result, interrupted); !st.is_ok()) return st;
    if (interrupted) {
      result.interrupted = true;
      result.points = points;
      return Status::ok();
    }
    if (Status st = append_file(o.out + "/sweep.csv", diagnose::sweep_csv_row(pt)); !st.is_ok()) return st;
    points.push_back(pt);
    if (progress)
      progress(SweepProgress{i + 1, todo.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                             fmt::format("{}w/{}p {:.0f} img/s {}", pt.workers, pt.prefetch, pt.images_per_second, pt.dominant_name())});
  }
  return finish_sweep(o, std::move(points), result);
}

}  // namespace stalldx::tasks
