// GPU tests (ctest label `gpu`): skipped, with the reason, where no CUDA device is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/pipeline/runner.h"
#include "test_dataset.h"

namespace stalldx::pipeline {
namespace {

#define REQUIRE_CUDA()                                                   \
  do {                                                                   \
    std::string why;                                                     \
    if (!cuda_device_present(why)) GTEST_SKIP() << "no CUDA device: " << why; \
  } while (0)

RunConfig gpu_run() {
  RunConfig c;
  c.data = stalldx::testing::small_dataset();
  c.device = DeviceKind::cuda;
  c.batch = 32;
  c.warmup = 2;
  c.steps = 40;
  c.workers = 16;
  c.prefetch = 2;
  c.device_ms = 2;
  c.verify = true;
  return c;
}

void expect_all_verified(const RunResult& r, int steps) {
  EXPECT_EQ(r.device.verified_batches, static_cast<std::uint64_t>(steps));
  EXPECT_EQ(r.device.checksum_mismatches, 0u);
}

TEST(Gpu, DeviceChecksumEqualsHostChecksumEveryBatch) {
  REQUIRE_CUDA();
  RunConfig c = gpu_run();
  RunResult r;
  const Status st = run_pipeline(c, r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_FALSE(r.device.standin);
  expect_all_verified(r, 42);
}

TEST(Gpu, PageablePerSampleAndUint8StillCorrect) {
  REQUIRE_CUDA();
  for (int variant = 0; variant < 4; ++variant) {
    RunConfig c = gpu_run();
    c.steps = 12;
    if (variant == 0) c.memory = MemoryKind::pageable;
    if (variant == 1) c.copy = CopyStyle::sample;
    if (variant == 2) c.pin_per_batch = true, c.memory = MemoryKind::pageable;
    if (variant == 3) c.output = OutputFormat::uint8_nhwc, c.sync_every_step = true;
    RunResult r;
    const Status st = run_pipeline(c, r);
    ASSERT_TRUE(st.is_ok()) << "variant " << variant << ": " << st.message();
    expect_all_verified(r, 14);
  }
}

TEST(Gpu, EveryCopyAndKernelIsCorrelatedToACallAndAStepOnOneClock) {
  REQUIRE_CUDA();
  RunConfig c = gpu_run();
  c.steps = 10;
  c.verify = false;
  RunResult r;
  ASSERT_TRUE(run_pipeline(c, r).is_ok());
  ASSERT_TRUE(r.has_trace);
  const Trace& t = r.trace;
  ASSERT_TRUE(t.meta.cupti) << "CUPTI did not start: " << (t.meta.config.count("cupti_warning") ? t.meta.config.at("cupti_warning") : "");
  std::map<std::uint64_t, const RuntimeCall*> calls;
  for (const RuntimeCall& call : t.calls) calls[call.correlation] = &call;
  int copies = 0, kernels = 0;
  for (const DeviceActivity& a : t.activities) {
    if (a.kind != ActivityKind::memcpy_h2d && a.kind != ActivityKind::kernel) continue;
    copies += a.kind == ActivityKind::memcpy_h2d;
    kernels += a.kind == ActivityKind::kernel;
    auto it = calls.find(a.correlation);
    ASSERT_NE(it, calls.end()) << "device record without its runtime call, correlation " << a.correlation;
    if (t.name(it->second->name).find("Memcpy") == std::string::npos && a.kind == ActivityKind::memcpy_h2d) continue;
    EXPECT_GE(a.step, 0) << t.name(a.name);
    EXPECT_EQ(a.step, it->second->step);
    EXPECT_GE(a.end_ns, it->second->begin_ns) << "device work ended before the call that submitted it began";
    EXPECT_GE(a.begin_ns, it->second->begin_ns);
  }
  EXPECT_GE(copies, 12);
  EXPECT_GE(kernels, 12);
  const diagnose::Report rep = diagnose::diagnose(t);
  EXPECT_TRUE(rep.coverage.device_records);
  EXPECT_EQ(rep.steps.size(), 12u);
}

}  // namespace
}  // namespace stalldx::pipeline
