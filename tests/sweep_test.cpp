// Sweep: list validation, the recommendation rule, CSV round trip (resume), and the command end to end.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "stalldx/diagnose/sweep_analysis.h"
#include "test_dataset.h"

namespace stalldx::diagnose {
namespace {

SweepPoint point(int w, int p, double ips, Verdict dominant) {
  SweepPoint s;
  s.workers = w;
  s.prefetch = p;
  s.images_per_second = ips;
  s.repeats = {ips, ips};
  s.dominant = dominant;
  return s;
}

TEST(SweepValidation, EmptyZeroNegativeAndDuplicatesAreRefused) {
  EXPECT_FALSE(validate_list({}, "workers").is_ok());
  EXPECT_FALSE(validate_list({1, 0}, "workers").is_ok());
  EXPECT_FALSE(validate_list({-2}, "workers").is_ok());
  const Status dup = validate_list({1, 2, 2}, "prefetch");
  EXPECT_FALSE(dup.is_ok());
  EXPECT_NE(dup.message().find("twice"), std::string::npos);
  EXPECT_TRUE(validate_list({1, 2, 4}, "workers").is_ok());
}

TEST(SweepRecommendation, SmallestSettingWithinFivePercentOfTheBest) {
  const std::vector<SweepPoint> pts = {point(1, 1, 1000, Verdict::decoding),     point(2, 1, 2000, Verdict::decoding),
                                       point(4, 1, 3820, Verdict::decoding),     point(4, 2, 3900, Verdict::device_bound),
                                       point(8, 1, 4000, Verdict::device_bound), point(8, 2, 4010, Verdict::device_bound),
                                       point(16, 1, 4005, Verdict::device_bound), point(16, 2, 3990, Verdict::device_bound)};
  const Recommendation r = recommend(pts);
  ASSERT_TRUE(r.best && r.chosen);
  EXPECT_EQ(r.best->workers, 8);
  EXPECT_EQ(r.best->prefetch, 2);
  EXPECT_EQ(r.chosen->workers, 4);   // 3820 >= 0.95 * 4010
  EXPECT_EQ(r.chosen->prefetch, 1);
  EXPECT_NE(r.text.find("device-bound from 8 workers on"), std::string::npos) << r.text;
  EXPECT_EQ(recommend({}).chosen, nullptr);
}

TEST(SweepCsv, RowsRoundTripForResume) {
  std::vector<SweepPoint> pts = {point(2, 3, 1234.5, Verdict::retrieval)};
  pts[0].stall_retrieval = 12.5;
  const std::string text = sweep_csv_header() + sweep_csv_row(pts[0]) + "garbage,row\n";
  int skipped = 0;
  const std::vector<SweepPoint> back = parse_sweep_csv(text, skipped);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(skipped, 1);
  EXPECT_EQ(back[0].workers, 2);
  EXPECT_EQ(back[0].prefetch, 3);
  EXPECT_DOUBLE_EQ(back[0].images_per_second, 1234.5);
  EXPECT_EQ(back[0].repeats.size(), 2u);
  EXPECT_EQ(back[0].dominant, Verdict::retrieval);
  EXPECT_DOUBLE_EQ(back[0].stall_retrieval, 12.5);
  EXPECT_NE(sweep_svg(back, recommend(back)).find("<svg"), std::string::npos);
}

int sh(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(SweepCommand, MeasuresUnprofiledDiagnosesProfiledAndResumes) {
  const std::string out = stalldx::testing::temp_dir("sweep");
  const std::string common = fmt::format("{} sweep --data {} --device none --batch 8 --steps 3 --warmup 1 --step-ms 2 --repeat 2 --out {}",
                                         STALLDX_BINARY, stalldx::testing::small_dataset(), out);
  ASSERT_EQ(sh(common + " --workers 1,2 --prefetch 1 > /dev/null 2>&1"), 0);
  int skipped = 0;
  EXPECT_EQ(parse_sweep_csv(stalldx::testing::read_file(out + "/sweep.csv"), skipped).size(), 2u);
  // Resume with a wider grid: only the new points run (the CSV grows by exactly those).
  ASSERT_EQ(sh(common + " --workers 1,2 --prefetch 1,2 --resume > " + out + "/log.txt 2>&1"), 0);
  EXPECT_NE(stalldx::testing::read_file(out + "/log.txt").find("2 points were already measured"), std::string::npos);
  const auto pts = parse_sweep_csv(stalldx::testing::read_file(out + "/sweep.csv"), skipped);
  EXPECT_EQ(pts.size(), 4u);
  const auto j = nlohmann::json::parse(stalldx::testing::read_file(out + "/sweep.json"));
  for (const auto& p : j.at("points")) {
    EXPECT_EQ(p.at("repeats").size(), 2u);          // the unprofiled runs
    EXPECT_FALSE(p.at("verdicts").empty());          // from the separate profiled run
  }
  EXPECT_TRUE(j.contains("recommended"));
  // Resume with other fixed options is refused; bad lists exit 2 before anything runs.
  EXPECT_EQ(sh(common + " --workers 1 --prefetch 1 --resume --step-ms 9 > /dev/null 2>&1"), 2);
  EXPECT_EQ(sh(common + " --workers 1,1 > /dev/null 2>&1"), 2);
  EXPECT_EQ(sh(common + " --workers 0 > /dev/null 2>&1"), 2);
}

}  // namespace
}  // namespace stalldx::diagnose
