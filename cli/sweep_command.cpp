// `stalldx sweep`: worker x prefetch settings. Per point: throughput from --repeat unprofiled runs
// (median; warm-up excluded by the runner), then one profiled run whose steady-state verdicts are kept.
// Throughput is never taken from the profiled run. Each point is appended to OUT/sweep.csv as it
// finishes, so an interrupted sweep keeps what it measured and --resume skips it.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "diagnosis.h"
#include "generator.h"
#include "run_options.h"
#include "runner.h"
#include "sweep_analysis.h"

namespace fs = std::filesystem;

namespace stalldx::cli {

namespace {
struct SweepArgs {
  pipeline::RunConfig base;
  std::vector<int> workers{1, 2, 4, 8, 16}, prefetch{1, 2, 4};
  int repeat = 3;
  std::string out = "sweep-out";
  bool resume = false, json = false;
};

std::string signature(const pipeline::RunConfig& c, int repeat) {
  return fmt::format("data={} batch={} warmup={} steps={} device={} step_ms={} device_ms={} inflight={} memory={} copy={} output={} "
                     "size={} latency={} bw={} cold={} spike={}/{} repeat={}",
                     c.data, c.batch, c.warmup, c.steps, pipeline::to_string(c.device), c.step_ms, c.device_ms, c.inflight,
                     pipeline::to_string(c.memory), pipeline::to_string(c.copy), pipeline::to_string(c.output), c.size,
                     c.read_latency_ms, c.read_bandwidth_mbps, c.cold_cache, c.spike_every, c.spike_ms, repeat);
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void progress(bool tty, std::size_t done, std::size_t total, double elapsed_s, const std::string& last) {
  const double eta = done ? elapsed_s / static_cast<double>(done) * static_cast<double>(total - done) : 0;
  if (tty) {
    const int width = 30, filled = static_cast<int>(width * done / std::max<std::size_t>(1, total));
    fmt::print(stderr, "\r[{}{}] {}/{} points, ETA {:.0f}s  {}\x1b[K", std::string(filled, '#'), std::string(width - filled, '.'), done, total,
               eta, last);
    if (done == total) fmt::print(stderr, "\n");
  } else {
    fmt::print(stderr, "sweep: {}/{} points done ({}), ETA {:.0f}s\n", done, total, last, eta);
  }
}
}  // namespace

Action add_sweep_command(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* sub = app.add_subcommand("sweep", "measure img/s over worker x prefetch settings (unprofiled) and diagnose each (profiled)");
  sub->add_option("--workers", a->workers, "worker counts, comma-separated")->delimiter(',')->capture_default_str();
  sub->add_option("--prefetch", a->prefetch, "prefetch depths, comma-separated")->delimiter(',')->capture_default_str();
  sub->add_option("--repeat", a->repeat, "unprofiled runs per point (median)")->capture_default_str();
  sub->add_option("--out", a->out, "folder for sweep.csv, sweep.json, sweep.svg")->capture_default_str();
  sub->add_flag("--resume", a->resume, "skip the points already in OUT/sweep.csv");
  sub->add_flag("--json", a->json, "print the results as JSON");
  add_run_options(*sub, a->base, true);
  return [a] {
    if (Status st = diagnose::validate_list(a->workers, "workers"); !st.is_ok()) { fmt::print(stderr, "stalldx sweep: {}\n", st.message()); return 2; }
    if (Status st = diagnose::validate_list(a->prefetch, "prefetch"); !st.is_ok()) { fmt::print(stderr, "stalldx sweep: {}\n", st.message()); return 2; }
    if (a->repeat <= 0) { fmt::print(stderr, "stalldx sweep: --repeat must be >= 1\n"); return 2; }
    pipeline::RunConfig base = a->base;
    base.trace.clear();
    if (Status st = pipeline::validate(base); !st.is_ok()) { fmt::print(stderr, "stalldx sweep: {}\n", st.message()); return 2; }
    if (base.data.empty())
      if (Status st = datasets::ensure_default_dataset(base.data, true); !st.is_ok()) { fmt::print(stderr, "stalldx sweep: {}\n", st.message()); return 1; }
    std::error_code ec;
    fs::create_directories(a->out, ec);
    const std::string csv = a->out + "/sweep.csv", sig_path = a->out + "/sweep.config";
    const std::string sig = signature(base, a->repeat);
    std::vector<diagnose::SweepPoint> points;
    if (a->resume && fs::exists(csv)) {
      if (read_all(sig_path) != sig + "\n") {
        fmt::print(stderr, "stalldx sweep: --resume with different options than {} records; use another --out\n", sig_path);
        return 2;
      }
      int skipped = 0;
      points = diagnose::parse_sweep_csv(read_all(csv), skipped);
      fmt::print(stderr, "stalldx sweep: resuming, {} points already measured{}\n", points.size(),
                 skipped ? fmt::format(" ({} malformed rows ignored)", skipped) : "");
    } else {
      std::ofstream(csv, std::ios::trunc) << diagnose::sweep_csv_header();
      std::ofstream(sig_path, std::ios::trunc) << sig << "\n";
    }
    std::vector<std::pair<int, int>> todo;
    for (int w : a->workers)
      for (int p : a->prefetch) {
        const bool done = std::any_of(points.begin(), points.end(), [&](const auto& x) { return x.workers == w && x.prefetch == p; });
        if (!done) todo.emplace_back(w, p);
      }
    const bool tty = isatty(2) != 0;
    const auto t0 = std::chrono::steady_clock::now();
    std::size_t finished = 0;
    for (auto [w, p] : todo) {
      diagnose::SweepPoint pt;
      pt.workers = w;
      pt.prefetch = p;
      pipeline::RunConfig c = base;
      c.workers = w;
      c.prefetch = p;
      std::vector<pipeline::RunResult> runs;
      for (int k = 0; k < a->repeat; ++k) {  // unprofiled: the throughput
        c.profile = false;
        pipeline::RunResult r;
        if (Status st = pipeline::run_pipeline(c, r, &stop_requested()); !st.is_ok()) { fmt::print(stderr, "\nstalldx sweep: {}\n", st.message()); return 1; }
        if (r.interrupted) { fmt::print(stderr, "\nstalldx sweep: interrupted; {} points kept in {}\n", points.size(), csv); return stop_signal() == 15 ? 143 : 130; }
        pt.repeats.push_back(r.images_per_second);
        runs.push_back(std::move(r));
      }
      std::sort(runs.begin(), runs.end(), [](const auto& x, const auto& y) { return x.images_per_second < y.images_per_second; });
      const pipeline::RunResult& med = runs[runs.size() / 2];
      pt.images_per_second = med.images_per_second;
      pt.step_p50 = med.step_p50;
      pt.step_p95 = med.step_p95;
      c.profile = true;  // profiled: the verdicts, never the throughput
      pipeline::RunResult prof;
      if (Status st = pipeline::run_pipeline(c, prof, &stop_requested()); !st.is_ok()) { fmt::print(stderr, "\nstalldx sweep: {}\n", st.message()); return 1; }
      if (prof.interrupted) { fmt::print(stderr, "\nstalldx sweep: interrupted; {} points kept in {}\n", points.size(), csv); return stop_signal() == 15 ? 143 : 130; }
      const diagnose::Report rep = diagnose::diagnose(prof.trace);
      pt.dominant = rep.summary.dominant;
      for (auto& [v, n] : rep.summary.verdict_counts) pt.verdicts[v] = n;
      pt.stall_retrieval = rep.summary.stall_ms[0];
      pt.stall_decoding = rep.summary.stall_ms[1];
      pt.stall_submission = rep.summary.stall_ms[2];
      pt.stall_unattributed = rep.summary.stall_ms[3];
      std::ofstream(csv, std::ios::app) << diagnose::sweep_csv_row(pt);
      points.push_back(pt);
      ++finished;
      progress(tty, finished, todo.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
               fmt::format("{}w/{}p {:.0f} img/s {}", w, p, pt.images_per_second, pt.dominant));
    }
    std::sort(points.begin(), points.end(), [](const auto& x, const auto& y) { return std::tie(x.workers, x.prefetch) < std::tie(y.workers, y.prefetch); });
    const diagnose::Recommendation rec = diagnose::recommend(points);
    std::ofstream(a->out + "/sweep.json") << diagnose::sweep_json(points, rec);
    std::ofstream(a->out + "/sweep.svg") << diagnose::sweep_svg(points, rec);
    if (a->json) {
      std::cout << diagnose::sweep_json(points, rec) << "\n";
    } else {
      std::cout << diagnose::sweep_table(points) << "\nrecommendation: " << rec.text << "\n";
      std::cout << fmt::format("results: {}/sweep.csv, sweep.json, sweep.svg\n", a->out);
    }
    return 0;
  };
}

}  // namespace stalldx::cli
