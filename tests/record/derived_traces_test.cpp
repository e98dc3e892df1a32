// Traces derived from a recording: one that begins mid-run (a long run's rings) numbering its steps as
// the run did, and a full recording seen as a sampled one would have been (eval --sampled-view).
#include <gtest/gtest.h>

#include <vector>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/record/merge.h"
#include "stalldx/record/part_format.h"
#include "stalldx/record/sampling.h"

namespace stalldx::record {
namespace {

// A full recording seen as a 2/4 plan would have recorded it: calls made in the windows (steps 0-1,
// 4-5, 8-9) and the device work they launched — even where it ran after the window closed — and
// nothing else of the device's; the windows in the metadata, as the recorder marks them.
TEST(SampledView, KeepsTheCallsOfTheWindowsStepsAndTheirWork) {
  Trace t;
  t.threads.push_back(ThreadInfo{0, 1, "main"});
  const std::int64_t ms = 1'000'000;
  const auto launch = t.intern("cudaLaunchKernel"), k = t.intern("kernel");
  for (std::int64_t s = 0; s < 12; ++s) {
    const std::int64_t b = (1 + s) * 10 * ms;
    t.ranges.push_back({b, b + 10 * ms, 0, t.intern("step"), Role::step});
    t.calls.push_back({b + ms, b + 2 * ms, 0, launch, static_cast<std::uint64_t>(s + 1)});
    DeviceActivity a;
    a.kind = ActivityKind::kernel;
    a.name = k;
    a.correlation = static_cast<std::uint64_t>(s + 1);
    a.begin_ns = b + 3 * ms;
    a.end_ns = b + 12 * ms;  // runs into the next step
    t.activities.push_back(a);
  }
  assign_steps(t);
  const Trace v = sampled_view(t, SamplePlan{0, 2, 4});
  std::vector<std::int64_t> call_steps, work_steps;
  for (const RuntimeCall& c : v.calls) call_steps.push_back(c.step);
  for (const DeviceActivity& a : v.activities) work_steps.push_back(a.step);
  EXPECT_EQ(call_steps, (std::vector<std::int64_t>{0, 1, 4, 5, 8, 9}));
  EXPECT_EQ(work_steps, call_steps) << "a window's work is kept where it ran after the window";
  EXPECT_EQ(v.ranges.size(), t.ranges.size());
  const auto windows = device_windows(v.meta);
  ASSERT_TRUE(windows);
  ASSERT_EQ(windows->size(), 3u);
  EXPECT_EQ((*windows)[1], (DeviceWindow{50 * ms, 70 * ms, 1})) << "from step 4's begin to step 6's";
  diagnose::Thresholds th;
  th.warmup_steps = 0;
  const diagnose::Report rep = diagnose::diagnose(v, th);
  EXPECT_TRUE(rep.coverage.sampled);
  EXPECT_EQ(rep.steps.size(), 12u);
  EXPECT_EQ(sampled_view(t, SamplePlan{}).calls.size(), t.calls.size()) << "a plan that does not sample keeps everything";
}

// A trace that begins mid-run (a long run's rings): unnumbered steps take the run's numbers from the
// first live mark that begins where a kept step does; a wait without a payload then names that batch.
TEST(WindowMarks, ATraceThatBeginsMidRunNumbersItsStepsAsTheRunDid) {
  const auto three_steps = [] {
    Trace t;
    t.threads.push_back(ThreadInfo{0, 1, "main"});
    for (std::int64_t k = 1; k <= 3; ++k) {
      t.ranges.push_back({k * 100, k * 100 + 90, 0, t.intern("train step"), Role::step});
      t.ranges.push_back({k * 100 + 1, k * 100 + 20, 0, t.intern("wait"), Role::wait_batch});
    }
    return t;
  };
  Trace t = three_steps();
  const std::vector<StepMark> marks{{50, 40}, {150, 41}, {200, 57}, {300, 58}};
  assign_steps(t, &marks);
  std::vector<std::int64_t> steps, batches;
  for (const HostRange& r : t.ranges) (r.role == Role::step ? steps : batches).push_back(r.role == Role::step ? r.step : r.batch);
  EXPECT_EQ(steps, (std::vector<std::int64_t>{56, 57, 58}));
  EXPECT_EQ(batches, (std::vector<std::int64_t>{56, 57, 58}));
  EXPECT_EQ(t.meta.config.at(kStepsBeforeTraceKey), "56");
  Trace unmarked = three_steps();
  const std::vector<StepMark> elsewhere{{150, 41}};
  assign_steps(unmarked, &elsewhere);
  EXPECT_EQ(unmarked.ranges[0].step, 0) << "no mark at a kept step: counted from the trace's first";
  EXPECT_FALSE(unmarked.meta.config.count(kStepsBeforeTraceKey));
  // The Python hook's iterations are marked when one ends (where the next begins): the mark at 200 ns
  // numbered the iteration it ended 57, so the one beginning there is 58.
  Trace hook;
  hook.threads.push_back(ThreadInfo{0, 1, "main"});
  for (std::int64_t k = 1; k <= 3; ++k) hook.ranges.push_back({k * 100, k * 100 + 100, 0, hook.intern(kPythonLoopStepName), Role::step});
  assign_steps(hook, &marks);
  EXPECT_EQ(hook.ranges[0].step, 57) << "200 ns begins the second kept iteration, step 58 counted from 0";
}

}  // namespace
}  // namespace stalldx::record
