// ranks_bench: synthetic per-rank traces of an MPI job (a test tool) and the cross-rank diagnosis over
// them, timed. Each rank's trace is what `stalldx run --device none` writes under mpirun: consumer
// steps with wait_batch, the stand-in's step, the all-reduce (role collective), worker reads; rank
// W/2 reads slowly (the straggler, retrieval). Generation holds one rank at a time; the analysis runs in
// a fresh child (fork) per case so its peak RSS is its own: 1 rank, then all of them.
//   ranks_bench [--ranks 256] [--steps 1000] [--dir DIR]   (prints; asserts nothing)
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "stalldx/diagnose/ranks.h"
#include "stalldx/run_config.h"
#include "stalldx/trace_io.h"

using namespace stalldx;

namespace {
constexpr std::int64_t kMs = 1'000'000;

Trace make_rank(int rank, int world, int steps) {
  Trace t;
  RunConfig c;
  c.rank = rank;
  c.world_size = world;
  c.device = DeviceKind::none;
  c.batch = 128;
  c.warmup = 2;
  c.steps = steps - 2;
  c.workers = 8;
  c.allreduce_mb = 51.2;
  to_meta(c, t.meta.config);
  t.meta.standin = true;
  t.meta.config["run_id"] = "00000000feedbeef";
  t.meta.config["host"] = "synthetic";
  t.meta.config["clock_offset_ns"] = "0";
  t.meta.host = t.meta.cpu_time = true;
  t.meta.device = "none (host stand-in)";
  t.threads.push_back({0, 1000 + rank, "consumer", 0, 0, ""});
  t.threads.push_back({1, 2000 + rank, "worker", 0, 0, ""});
  const std::uint32_t n_step = t.intern("step"), n_wait = t.intern("wait_batch"), n_read = t.intern("read_file"),
                      n_ar = t.intern("all_reduce"), n_sc = t.intern("standin_step"), n_mpi = t.intern("MPI_Allreduce 51.2 MB");
  const bool straggler = rank == world / 2;
  const std::int64_t stall = 40 * kMs, compute = 30 * kMs, reduce = 5 * kMs;
  const std::int64_t period = stall + compute + reduce + kMs;
  for (int s = 0; s < steps; ++s) {
    const std::int64_t t0 = s * period;
    const std::int64_t wait_end = t0 + (straggler ? stall : 20'000) + (rank % 7) * 10'000;  // a little jitter
    t.ranges.push_back({t0, wait_end, 0, n_wait, Role::wait_batch, s, s, -1, 5'000, 0, 0});
    if (straggler)
      for (int k = 0; k < 4; ++k)
        t.ranges.push_back({t0 + k * (stall / 4), t0 + (k + 1) * (stall / 4) - 1000, 1, n_read, Role::retrieval, s, s, k, 20'000, 0, 1 << 16});
    const std::int64_t arrive = wait_end + compute;
    const std::int64_t end = t0 + stall + compute + reduce + 10'000 * 7;
    DeviceActivity sc;
    sc.begin_ns = wait_end;
    sc.end_ns = arrive;
    sc.device = -1;
    sc.kind = ActivityKind::standin;
    sc.name = n_sc;
    sc.step = s;
    t.activities.push_back(sc);
    sc.begin_ns = arrive;
    sc.end_ns = end;
    sc.stream = 1;
    sc.name = n_mpi;
    t.activities.push_back(sc);
    t.ranges.push_back({arrive, end, 0, n_ar, Role::collective, s, s, -1, 1'000, 0, 0});
    t.ranges.push_back({t0, end, 0, n_step, Role::step, s, s, -1, 1'000'000, 0, 0});
  }
  t.meta.steps_completed = steps;
  return t;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// In a fresh child: read + reduce `n` ranks one at a time, then the cross-rank report.
void analyze(const std::string& dir, int n) {
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    const auto t0 = std::chrono::steady_clock::now();
    diagnose::CrossRankAccumulator acc;
    for (int r = 0; r < n; ++r) {
      Trace t;
      const std::string f = fmt::format("{}/out.rank{}.json", dir, r);
      if (Status st = read_trace_file(f, t); !st.is_ok()) {
        fmt::print("read {}: {}\n", f, st.message());
        _exit(1);
      }
      diagnose::RankSteps rs;
      if (!diagnose::rank_steps(t, f, {}, rs).is_ok() || !acc.add(rs).is_ok()) _exit(1);
    }
    const diagnose::CrossRankReport rep = acc.finish();
    const double secs = seconds_since(t0);
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    fmt::print("{:>5} rank{}: {:.2f} s ({:.1f} ms a rank), peak RSS {:.0f} MB; straggler {} on {} of {} steady steps\n", n, n == 1 ? " " : "s",
               secs, secs * 1e3 / n, ru.ru_maxrss / 1e3, rep.run_straggler, rep.ranks.empty() ? 0 : [&] {
                 int m = 0;
                 for (const auto& row : rep.ranks) m = std::max(m, row.straggler_steps);
                 return m;
               }(), rep.steps.size());
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
}
}  // namespace

int main(int argc, char** argv) {
  int ranks = 256, steps = 1000;
  std::string dir;
  CLI::App app{"ranks_bench: write, read and diagnose across ranks a job of synthetic rank traces"};
  app.add_option("--ranks", ranks, "ranks in the job")->check(CLI::Range(1, 65'536));
  app.add_option("--steps", steps, "steps per rank")->check(CLI::Range(1, 10'000'000));
  app.add_option("--dir", dir, "where the rank traces go (default: a directory of its own, removed after)");
  CLI11_PARSE(app, argc, argv);
  const bool own_dir = dir.empty();
  if (own_dir) dir = fmt::format("/tmp/stalldx-ranks-bench-{}", getpid());
  std::filesystem::create_directories(dir);
  const auto t0 = std::chrono::steady_clock::now();
  std::uintmax_t bytes = 0, largest = 0;
  for (int r = 0; r < ranks; ++r) {
    const std::string f = fmt::format("{}/out.rank{}.json", dir, r);
    if (Status st = write_trace_file(make_rank(r, ranks, steps), f); !st.is_ok()) {
      fmt::print("write {}: {}\n", f, st.message());
      return 1;
    }
    const auto sz = std::filesystem::file_size(f);
    bytes += sz;
    largest = std::max(largest, sz);
  }
  malloc_trim(0);
  fmt::print("{} ranks x {} steps: {:.0f} MB of traces ({:.1f} MB the largest) written in {:.1f} s\n", ranks, steps, bytes / 1e6, largest / 1e6,
             seconds_since(t0));
  analyze(dir, 1);
  analyze(dir, ranks);
  if (own_dir) std::filesystem::remove_all(dir);
  return 0;
}
