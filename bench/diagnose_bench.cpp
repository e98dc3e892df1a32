// Analysis speed: a synthetic trace of ~1 M records (a 16-worker pipeline, per-sample retrieval + decode
// ranges, CUDA calls and device work per step) is diagnosed, written and read back; times are printed.
// Then what `stalldx diagnose FILE` does — read the file (plain, then gzip) and diagnose it — runs in a
// fresh child process each, which prints its time and its own peak RSS against the file's size.
//   diagnose_bench [records]
#include <fmt/format.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <malloc.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/trace_io.h"

using namespace stalldx;

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Trace synthetic(std::size_t target) {
  Trace t;
  t.meta.host = t.meta.cupti = t.meta.cpu_time = true;
  t.meta.config.insert_or_assign("warmup", std::string("3"));  // (not operator= of a literal: GCC 12 -Wrestrict false positive, PR 105329)
  t.threads.push_back({0, 1, "consumer", 0});
  for (std::uint32_t w = 1; w <= 16; ++w) t.threads.push_back({w, static_cast<std::int64_t>(w + 1), "worker", 0});
  const auto step = t.intern("step"), wait = t.intern("wait_batch"), submit = t.intern("submit_batch"), read = t.intern("read_file"),
             dec = t.intern("decode_transform"), memcpy_api = t.intern("cudaMemcpyAsync"), launch = t.intern("cudaLaunchKernel"),
             h2d = t.intern("Memcpy HtoD (pinned)"), kern = t.intern("synthetic_step_kernel");
  const std::int64_t ms = 1'000'000;
  std::uint64_t corr = 1;
  std::int64_t now = 40 * ms;  // the first batch's reads begin 30 ms before its step: all after the origin
  for (std::int64_t k = 0; t.ranges.size() + t.calls.size() + t.activities.size() < target; ++k) {
    const std::int64_t s0 = now;
    t.ranges.push_back({s0, s0 + 31 * ms, 0, step, Role::step, k, k, -1, 30 * ms, 1, 0});
    t.ranges.push_back({s0, s0 + (k % 3) * ms, 0, wait, Role::wait_batch, k, k, -1, 0, 0, 0});
    t.ranges.push_back({s0 + 3 * ms, s0 + 3 * ms + 100'000, 0, submit, Role::submit, k, k, -1, -1, -1, 0});
    for (int i = 0; i < 128; ++i) {
      const std::int64_t b = s0 - 30 * ms + i * 200'000;
      const std::uint32_t w = 1 + static_cast<std::uint32_t>(i % 16);
      t.ranges.push_back({b, b + 20'000, w, read, Role::retrieval, -1, k + 1, k * 128 + i, 15'000, 0, 40'000});
      t.ranges.push_back({b + 20'000, b + 1'800'000, w, dec, Role::decode, -1, k + 1, k * 128 + i, 1'750'000, 0, 0});
    }
    t.calls.push_back({s0 + 3 * ms, s0 + 3 * ms + 10'000, 0, memcpy_api, corr, k});
    t.activities.push_back({s0 + 3 * ms + 20'000, s0 + 4 * ms + 420'000, 0, 13, ActivityKind::memcpy_h2d, h2d, 77'070'336, MemKind::pinned, corr, k});
    ++corr;
    t.calls.push_back({s0 + 3 * ms + 20'000, s0 + 3 * ms + 25'000, 0, launch, corr, k});
    t.activities.push_back({s0 + 4 * ms + 500'000, s0 + 34 * ms, 0, 7, ActivityKind::kernel, kern, 0, MemKind::none, corr, k});
    ++corr;
    now += 31 * ms;
  }
  return t;
}
}  // namespace

int main(int argc, char** argv) {
  std::size_t target = 1'000'000;
  if (argc > 1) {
    char* end = nullptr;
    target = std::strtoull(argv[1], &end, 10);
    if (argc > 2 || end == argv[1] || *end != '\0' || target == 0) {
      std::fprintf(stderr, "usage: diagnose_bench [RECORDS]   (RECORDS: a positive count, default 1000000; got '%s')\n", argv[1]);
      return 2;
    }
  }
  Trace t = synthetic(target);
  const std::size_t records = t.ranges.size() + t.calls.size() + t.activities.size();
  auto t0 = std::chrono::steady_clock::now();
  const diagnose::Report rep = diagnose::diagnose(t);
  const double analyse = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  std::ostringstream out;
  write_trace_json(t, out);
  const double write = seconds_since(t0);
  std::string text = out.str();
  Trace back;
  t0 = std::chrono::steady_clock::now();
  const Status st = read_trace_json(text, back);
  const double read = seconds_since(t0);
  if (!(back == t))
    fmt::print("differs: names {} threads {} ranges {} calls {} activities {} counters {} meta {}\n", back.names == t.names, back.threads == t.threads,
               back.ranges == t.ranges, back.calls == t.calls, back.activities == t.activities, back.counters == t.counters, back.meta == t.meta);
  fmt::print("records {} ({} steps); analysis {:.3f} s ({:.0f} krec/s); write {:.3f} s; read {:.3f} s ({:.0f} MB, {:.0f} MB/s){}\n",
             records, rep.steps.size(), analyse, records / analyse / 1e3, write, read, text.size() / 1e6,
             text.size() / 1e6 / read, st.is_ok() && back == t ? "; round trip equal" : "; ROUND TRIP DIFFERS");

  // From a file, as `stalldx diagnose` does, each in a child of its own so its peak RSS is its own.
  char dir_template[] = "/tmp/diagnose_bench-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return 1;
  const std::string dir = dir_template, plain = dir + "/t.json", gz = dir + "/t.json.gz";
  if (!write_trace_file(t, plain).is_ok()) return 1;
  gzFile g = gzopen(gz.c_str(), "wb6");
  if (g == nullptr || gzwrite(g, text.data(), static_cast<unsigned>(text.size())) != static_cast<int>(text.size()) || gzclose(g) != Z_OK) return 1;
  // The child starts from this process's memory: give back what the in-memory round trip held.
  const auto text_bytes = static_cast<double>(text.size());
  t = Trace{};
  back = Trace{};
  std::string().swap(text);
  std::ostringstream().swap(out);
  malloc_trim(0);
  for (const std::string& path : {plain, gz}) {
    const auto file_mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
      const auto c0 = std::chrono::steady_clock::now();
      Trace read_back;
      const Status rs = read_trace_file(path, read_back);
      const double r = seconds_since(c0);
      const diagnose::Report cr = diagnose::diagnose(read_back);
      const double total = seconds_since(c0);
      rusage ru{};
      getrusage(RUSAGE_SELF, &ru);
      fmt::print("{}: {:.0f} MB on disk; read {:.3f} s + diagnose {:.3f} s = {:.3f} s; peak RSS {:.0f} MB ({:.2f}x the JSON text){}\n",
                 path.substr(dir.size() + 1), file_mb, r, total - r, total, ru.ru_maxrss / 1e3, ru.ru_maxrss * 1e3 / text_bytes,
                 rs.is_ok() && !cr.steps.empty() ? "" : "; FAILED");
      std::fflush(stdout);
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
