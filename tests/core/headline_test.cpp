// The headline (the report's first line) weighs time by what the loop waited on, in the program's own
// terms: a wait for a batch whose producers left no records is input (its kind unknown), and a loop with
// no device records that waited for a CPU is slowed by a busy host, not by CUDA calls it never made.
#include <gtest/gtest.h>

#include <string>

#include "advice_support.h"
#include "stalldx/diagnose/diagnosis.h"

namespace stalldx::diagnose {
namespace {
using namespace advice_tests;

// A loop of 12 steps: each waits `wait_ms` in a wait_batch range with no producer range recorded, then runs
// forward (40 %) and backward (60 %) of `work_ms`, `runq_share` of them runnable but not running. With
// `device`, each step then launches a 2 ms kernel.
Trace unrecorded_producers(double wait_ms, double work_ms, double runq_share, bool device) {
  Loop l({});
  if (!device) l.t.meta.cupti = false;  // host records only
  double t = 0;
  for (int k = 0; k < 12; ++k) {
    const double w = t + wait_ms, f = w + 0.4 * work_ms, e = w + work_ms;
    l.range(Role::step, "step", t, e + (device ? 2.2 : 0), k, k);
    l.range(Role::wait_batch, "data_wait", t, w, k, k);
    l.range(Role::compute, "forward", w, f, k, -1, 0, 0.4 * work_ms * (1 - runq_share), 0.4 * work_ms * runq_share);
    l.range(Role::compute, "backward", f, e, k, -1, 0, 0.6 * work_ms * (1 - runq_share), 0.6 * work_ms * runq_share);
    if (device) l.call("cudaLaunchKernel", e, e + 0.1, k, ActivityKind::kernel, "k", e + 0.1, e + 2.1);
    t = e + (device ? 2.2 : 0);
  }
  return l.t;
}

TEST(Headline, AWaitWhoseProducersLeftNoRecordsIsInputNotSplit) {
  for (bool device : {false, true}) {
    const Report r = diagnose(unrecorded_producers(20, 5, 0, device));
    const Headline& h = r.summary.headline;
    EXPECT_EQ(h.bound, Bound::input) << h.text;
    EXPECT_GT(h.unsplit, 0.6) << h.text;
    EXPECT_NEAR(h.input, h.retrieval + h.decoding + h.unsplit, 1e-9);
    EXPECT_LT(h.unattributed, 0.05) << "the wait is input, not time outside any range: " << h.text;
    EXPECT_NE(h.text.find("not split"), std::string::npos) << h.text;
    EXPECT_NE(report_json(r).find("\"unsplit\""), std::string::npos);
  }
}

TEST(Headline, WithoutDeviceRecordsAStarvedLoopIsNotSubmissionBound) {
  // 2 ms waits, 10 ms of work of which a third waited for a CPU: the loop's own work, on a busy host.
  const Report r = diagnose(unrecorded_producers(2, 10, 0.35, false));
  const Headline& h = r.summary.headline;
  EXPECT_EQ(h.bound, Bound::loop) << h.text;
  EXPECT_EQ(h.submission, 0) << h.text;
  EXPECT_GT(h.starved, 0.2) << h.text;
  EXPECT_EQ(h.text.find("CUDA"), std::string::npos) << "no CUDA call was made: " << h.text;
  EXPECT_NE(h.text.find("waiting for a CPU"), std::string::npos) << h.text;
  // With device records the same starvation delays the device's work: submission, as before.
  const Report dev = diagnose(unrecorded_producers(2, 10, 0.35, true));
  EXPECT_EQ(dev.summary.headline.starved, 0) << dev.summary.headline.text;
}

}  // namespace
}  // namespace stalldx::diagnose
