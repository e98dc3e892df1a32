// HTML reports in a real browser: Debian's chromium loads each kind of report headless; the page must
// run its script without a console error and show the key elements (verdicts, advice, chart, every
// step row) — a blank or broken page fails. Screenshots land in the build folder
// (report-screenshots/*.png, a CI artifact). Skips, with the reason, where no chromium is installed.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>

#include "stalldx/diagnose/evaluation.h"
#include "stalldx/diagnose/sweep_analysis.h"
#include "stalldx/trace_io.h"
#include "stalldx/output_file.h"
#include "test_dataset.h"
#include "test_support.h"

namespace stalldx {
namespace {

std::string find_browser() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    const std::string probe = fmt::format("command -v {} > /dev/null 2>&1", name);
    if (std::system(probe.c_str()) == 0) return name;
  }
  return "";
}

int run(const std::string& cmd) {
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

struct Loaded {
  std::string dom, console;
};

// Loads `html` headless: the DOM after the script ran, the console lines, and a screenshot.
Loaded load(const std::string& browser, const std::string& html, const std::string& name) {
  const std::string dir = stalldx::testing::temp_dir("browser");
  const std::string shots = std::string(STALLDX_BINARY_DIR) + "/report-screenshots";
  std::filesystem::create_directories(shots);
  const std::string common = fmt::format("{} --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir={}/profile", browser, dir);
  run(fmt::format("{} --enable-logging=stderr --v=0 --dump-dom file://{} > {}/dom.html 2> {}/console.txt", common, html, dir, dir));
  run(fmt::format("{} --hide-scrollbars --window-size=1200,1600 --screenshot={}/{}.png file://{} > /dev/null 2>&1", common, shots, name, html));
  Loaded l;
  l.dom = stalldx::testing::read_file(dir + "/dom.html");
  const std::string log = stalldx::testing::read_file(dir + "/console.txt");
  for (std::size_t p = log.find("CONSOLE"); p != std::string::npos; p = log.find("CONSOLE", p + 1))
    l.console += log.substr(p, log.find('\n', p) - p) + "\n";
  return l;
}

void expect_report(const Loaded& l, const std::string& name, std::size_t steps) {
  EXPECT_EQ(l.console, "") << name << ": console messages";
  EXPECT_NE(l.dom.find("data-ready=\"1\""), std::string::npos) << name << ": the page's script did not run";
  EXPECT_NE(l.dom.find("id=\"summary\""), std::string::npos) << name;
  EXPECT_NE(l.dom.find("id=\"advice\""), std::string::npos) << name;
  EXPECT_NE(l.dom.find("<svg"), std::string::npos) << name << ": no chart";
  EXPECT_NE(l.dom.find(fmt::format("<span id=\"shown\">{}</span>", steps)), std::string::npos) << name << ": steps matching the filter";
  EXPECT_NE(l.dom.find(fmt::format("data-rendered=\"{}\"", std::min<std::size_t>(steps, 200))), std::string::npos) << name << ": rows on the first page";
}

class Browser : public ::testing::Test {
 protected:
  void SetUp() override {
    browser_ = find_browser();
    if (browser_.empty()) GTEST_SKIP() << "no chromium in PATH (scripts/setup-debian.sh installs Debian's)";
    dir_ = stalldx::testing::temp_dir("html");
  }
  std::string browser_, dir_;
};

TEST_F(Browser, DiagnoseReportsOfAnH200TraceAndATorchTraceLoadClean) {
  const std::string h200 = std::string(STALLDX_TEST_DATA) + "/h200/retrieval-latency.json";
  ASSERT_EQ(run(fmt::format("{} diagnose {} --html {}/h200.html > /dev/null 2>&1", STALLDX_BINARY, h200, dir_)), 0);
  Trace t;
  ASSERT_TRUE(read_trace_file(h200, t).is_ok());
  std::size_t steps = 0;
  for (const HostRange& r : t.ranges) steps += r.role == Role::step;  // the reference pipeline: the consumer's only
  ASSERT_GT(steps, 0u);
  expect_report(load(browser_, dir_ + "/h200.html", "diagnose-h200"), "h200", steps);

  const std::string torch = std::string(STALLDX_TEST_DATA) + "/kineto/h200-per-sample-copies.pt.trace.json.gz";
  ASSERT_EQ(run(fmt::format("{} diagnose {} --html {}/torch.html > /dev/null 2>&1", STALLDX_BINARY, torch, dir_)), 0);
  expect_report(load(browser_, dir_ + "/torch.html", "diagnose-torch"), "torch", 8);
}

TEST_F(Browser, RunReportLoadsClean) {
  ASSERT_EQ(run(fmt::format("{} run --data {} --device none --steps 6 --warmup 1 --batch 8 --html {}/run.html > /dev/null 2>&1", STALLDX_BINARY,
                            stalldx::testing::small_dataset(), dir_)),
            0);
  expect_report(load(browser_, dir_ + "/run.html", "run"), "run", 7);
}

TEST_F(Browser, FourThousandStepsStayUnderFiveMegabytesAndLoadClean) {
  // A 4,000-step trace: consumer steps waiting on reads, a stand-in device step.
  Trace t;
  t.meta.host = true;
  t.threads = {{0, 1, "consumer"}, {1, 2, "worker"}};
  const auto step = t.intern("step"), wait = t.intern("wait_batch"), read = t.intern("read_file"), dev = t.intern("standin_compute");
  const std::int64_t ms = 1'000'000;
  for (std::int64_t k = 0; k < 4000; ++k) {
    const std::int64_t s0 = k * 10 * ms;
    t.ranges.push_back({s0, s0 + 10 * ms, 0, step, Role::step, k, k});
    t.ranges.push_back({s0, s0 + 4 * ms, 0, wait, Role::wait_batch, k, k});
    t.ranges.push_back({s0, s0 + 4 * ms, 1, read, Role::retrieval, -1, k, -1, ms / 10});
    DeviceActivity a;
    a.begin_ns = s0 + 4 * ms;
    a.end_ns = s0 + 10 * ms;
    a.kind = ActivityKind::standin;
    a.device = -1;
    a.step = k;
    a.name = dev;
    t.activities.push_back(a);
  }
  ASSERT_TRUE(write_trace_file(t, dir_ + "/big.json").is_ok());
  ASSERT_EQ(run(fmt::format("{} diagnose {}/big.json --html {}/big.html > /dev/null 2>&1", STALLDX_BINARY, dir_, dir_)), 0);
  EXPECT_LT(std::filesystem::file_size(dir_ + "/big.html"), 5u << 20);
  const Loaded l = load(browser_, dir_ + "/big.html", "diagnose-4000-steps");
  expect_report(l, "4000 steps", 4000);
  // Measured, never asserted: navigation start to the page's script done.
  const auto at = l.dom.find("data-ready-ms=\"");
  if (at != std::string::npos)
    std::printf("4,000-step report: %zu bytes, ready %s ms after navigation\n", static_cast<std::size_t>(std::filesystem::file_size(dir_ + "/big.html")),
                l.dom.substr(at + 15, l.dom.find('"', at + 15) - at - 15).c_str());
}

TEST_F(Browser, SweepAndEvalPagesLoadClean) {
  std::vector<diagnose::SweepPoint> pts;
  for (int w : {1, 2, 4})
    for (int p : {1, 2}) {
      diagnose::SweepPoint pt;
      pt.workers = w;
      pt.prefetch = p;
      pt.images_per_second = 100.0 * w + p;
      pt.repeats = {pt.images_per_second};
      pt.dominant = w < 4 ? diagnose::Verdict::decoding : diagnose::Verdict::device_bound;
      pts.push_back(pt);
    }
  const std::vector<diagnose::Prediction> predicted{{1, 98, "CPU"}, {2, 190, "CPU"}, {4, 400, "device"}};
  ASSERT_TRUE(write_file_atomic(dir_ + "/sweep.html", diagnose::sweep_html(pts, diagnose::recommend(pts), predicted, 4)).is_ok());
  const Loaded sweep = load(browser_, dir_ + "/sweep.html", "sweep");
  EXPECT_EQ(sweep.console, "");
  EXPECT_NE(sweep.dom.find("data-ready=\"1\""), std::string::npos);
  EXPECT_NE(sweep.dom.find("<svg"), std::string::npos) << "no heatmap";
  EXPECT_NE(sweep.dom.find("id=\"points\""), std::string::npos);
  EXPECT_NE(sweep.dom.find("id=\"whatif\""), std::string::npos) << "the what-if table";
  EXPECT_NE(sweep.dom.find("-3.9%"), std::string::npos) << "predicted 98 against the best measured 102";

  diagnose::ScenarioScore sc;
  sc.name = "retrieval-latency";
  sc.expected = "retrieval";
  sc.steady = 12;
  sc.correct = 11;
  sc.accuracy = 11.0 / 12;
  sc.cells[{diagnose::Verdict::retrieval, diagnose::Verdict::retrieval}] = 11;
  sc.cells[{diagnose::Verdict::retrieval, diagnose::Verdict::device_bound}] = 1;
  sc.misses = {"step 13: expected retrieval, got device-bound"};
  ASSERT_TRUE(write_file_atomic(dir_ + "/eval.html", diagnose::eval_html({sc})).is_ok());
  const Loaded eval = load(browser_, dir_ + "/eval.html", "eval");
  EXPECT_EQ(eval.console, "");
  EXPECT_NE(eval.dom.find("data-ready=\"1\""), std::string::npos);
  EXPECT_NE(eval.dom.find("id=\"confusion\""), std::string::npos);
  EXPECT_NE(eval.dom.find("92%"), std::string::npos);
}

}  // namespace
}  // namespace stalldx
