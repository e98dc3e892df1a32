// `record --sample` on a device (ctest label gpu; skipped, with the reason, where there is none): 105
// attach/detach cycles in one process leak neither host nor device memory and every window's kernels are
// linked to their calls; CUPTI is really finalized between them; a program that uses a CUDA graph
// (captured before its first step, replayed every step) keeps CUPTI attached instead — a graph replayed
// after a finalize failed — and its graph's kernels are recorded in every later window.
#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <map>
#include <sstream>
#include <string_view>

#include "recorded.h"
#include "stalldx/record/part_format.h"
#include "stalldx/record/sampling.h"
#include "stalldx/trace_io.h"

namespace stalldx::record {
namespace {

struct Case {
  const char* record_flags;  // "" (finalized between windows) or "--no-cupti-detach" (records off)
  bool graph;                // the program captures and replays a CUDA graph
};
void PrintTo(const Case& c, std::ostream* os) { *os << "record " << (*c.record_flags ? c.record_flags : "(finalized)") << (c.graph ? ", with a graph" : ""); }
class RecordSampleGpu : public ::testing::TestWithParam<Case> {};

TEST_P(RecordSampleGpu, HundredAttachDetachCyclesLeakNothingAndLinkEveryKernel) {
  const Case c = GetParam();
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no CUDA device";
  Recorded r;
  r.dir = stalldx::testing::temp_dir("record-gpu");
  r.trace_path = r.dir + "/t.json";
  // The programs: where this build put them, or (a bundle run on another host) where the environment says.
  const char* stalldx = std::getenv("STALLDX_BINARY");
  const char* program = std::getenv("CUDA_WINDOWS");
  // Windows of 1 step in 4 (and its tail step), steps of 30 ms polling the stream: 105 windows, each
  // followed by calls whose exits finalize CUPTI before the next one readies it again.
  const std::string cmd = fmt::format("{} record --sample 1/4 {} --live 0 --trace {} -- {} --steps 420 --step-ms 30 --every 20{} > {}/log.txt 2>&1",
                                      stalldx && *stalldx ? stalldx : STALLDX_BINARY, c.record_flags, r.trace_path,
                                      program && *program ? program : CUDA_WINDOWS, c.graph ? "" : " --no-graph", r.dir);
  const int status = std::system(cmd.c_str());
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.log = stalldx::testing::read_file(r.dir + "/log.txt");
  ASSERT_EQ(r.rc, 0) << r.log;
  // Memory: the first sample after the first cycles against the last (host RSS within 16 MB, device free
  // memory within 64 MB: CUPTI's own buffers are allocated once and recycled).
  std::istringstream in(r.log);
  std::string word;
  std::vector<std::pair<long, long>> mem;  // (rss KB, device free MB)
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    int step = 0;
    long rss = 0, free_mb = 0;
    if (l >> word && word == "mem" && l >> step >> rss >> free_mb) mem.emplace_back(rss, free_mb);
  }
  ASSERT_GE(mem.size(), 10u) << r.log;
  EXPECT_LT(mem.back().first - mem[2].first, 16 * 1024) << r.log;
  EXPECT_LT(std::labs(mem.back().second - mem[2].second), 64) << r.log;
  Trace t;
  ASSERT_TRUE(read_trace_file(r.trace_path, t).is_ok()) << r.log;
  const auto windows = device_windows(t.meta);
  ASSERT_TRUE(windows);
  // 105 windows opened; the trace keeps the first and the newest (kMaxWindowFiles in all), the rest counted.
  const auto dropped = t.meta.config.count("device_windows_without_records") ? std::stoul(t.meta.config["device_windows_without_records"]) : 0ul;
  EXPECT_GE(windows->size() + dropped, 100u) << r.log;
  EXPECT_EQ(windows->size(), static_cast<std::size_t>(kMaxWindowFiles)) << r.log;
  // Every kernel linked to a call and a step, the graph's (3 a replay) among them in late windows.
  std::map<std::uint32_t, const RuntimeCall*> calls;
  for (const RuntimeCall& c : t.calls) calls[c.correlation] = &c;
  std::map<std::int64_t, int> kernels_by_step;
  int unlinked = 0;
  for (const DeviceActivity& a : t.activities) {
    if (a.kind != ActivityKind::kernel) continue;
    if (!calls.count(a.correlation)) ++unlinked;
    kernels_by_step[a.step]++;
  }
  EXPECT_EQ(unlinked, 0);
  EXPECT_EQ(t.meta.unmatched_device, 0u);
  int graph_steps = 0;
  for (const auto& [step, k] : kernels_by_step) graph_steps += step >= 200 && k == (c.graph ? 7 : 4);  // 4 launched (+ 3 replayed)
  EXPECT_GE(graph_steps, 15) << "every kernel of the late windows' steps is recorded";
  // CUPTI really finalized between the windows (each finalize is a range of the thread that made it);
  // records off, or a program that uses CUDA graphs, never — the latter said in the trace and the summary.
  int finalizes = 0;
  for (const HostRange& h : t.ranges) finalizes += t.name(h.name).starts_with("stalldx recorder: CUPTI finalized");
  const bool finalizing = std::string_view(c.record_flags).empty();
  if (finalizing && !c.graph) {
    EXPECT_GE(finalizes, 100) << r.log;
  } else {
    EXPECT_EQ(finalizes, 0) << r.log;
  }
  EXPECT_EQ(t.meta.config.count(kCuptiKeptKey), finalizing && c.graph ? 1u : 0u);
  if (finalizing && c.graph) {
    EXPECT_NE(r.log.find("CUPTI kept attached between windows"), std::string::npos) << r.log;
  }
}

INSTANTIATE_TEST_SUITE_P(Detach, RecordSampleGpu,
                         ::testing::Values(Case{"", false}, Case{"", true}, Case{"--no-cupti-detach", true}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(*i.param.record_flags ? "RecordsOff" : "Finalized") + (i.param.graph ? "WithGraph" : "NoGraph");
                         });

}  // namespace
}  // namespace stalldx::record
