// The run field table is the one declaration of every run option: each field parses what it prints,
// refuses what it cannot hold, and appears in the metadata, the summary line and the resume signature.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <set>

#include "field_values.h"
#include "stalldx/run_config.h"

namespace stalldx {
namespace {

using testing::alternate_config;
using testing::alternate_value;

TEST(RunFields, NamesAreUniqueAndFindableBothWays) {
  std::set<std::string> names;
  for (const RunField& f : run_fields()) {
    EXPECT_TRUE(names.insert(std::string(f.name)).second) << f.name;
    EXPECT_EQ(find_run_field(f.name), &f);
    EXPECT_EQ(find_run_field(f.option()), &f);
    EXPECT_FALSE(f.help.empty()) << f.name;
  }
  EXPECT_EQ(find_run_field("no-such-option"), nullptr);
}

TEST(RunFields, EveryFieldParsesWhatItPrintsAndTakesAnotherValue) {
  const RunConfig defaults{};
  for (const RunField& f : run_fields()) {
    RunConfig c;
    ASSERT_TRUE(f.assign(c, f.value(defaults)).is_ok()) << f.name;
    EXPECT_EQ(f.value(c), f.value(defaults)) << f.name;
    const std::string alt = alternate_value(f);
    ASSERT_TRUE(f.assign(c, alt).is_ok()) << f.name << " = " << alt;
    EXPECT_NE(f.value(c), f.value(defaults)) << f.name;
    RunConfig back;
    ASSERT_TRUE(f.assign(back, f.value(c)).is_ok()) << f.name;
    EXPECT_EQ(f.value(back), f.value(c)) << f.name;
  }
}

TEST(RunFields, NumbersOutsideTheirBoundsNanAndInfinityAreRefusedNamingTheOption) {
  for (const RunField& f : run_fields()) {
    RunConfig c;
    const std::string before = f.value(c);
    if (f.type == FieldType::real) {
      for (const char* bad : {"nan", "inf", "-inf", "1e400", "abc", ""}) {
        const Status st = f.assign(c, bad);
        EXPECT_FALSE(st.is_ok()) << f.name << " took " << bad;
        EXPECT_NE(st.message().find("--" + f.option()), std::string::npos) << st.message();
      }
    }
    if (f.type == FieldType::integer || f.type == FieldType::unsigned_integer) {
      for (const char* bad : {"1.5", "x", "", "99999999999999999999999"}) EXPECT_FALSE(f.assign(c, bad).is_ok()) << f.name << " took " << bad;
      if (f.min > -1e18) {
        EXPECT_FALSE(f.assign(c, std::to_string(static_cast<long long>(f.min) - 1)).is_ok()) << f.name;
      }
      if (f.max < 1e18) {
        EXPECT_FALSE(f.assign(c, std::to_string(static_cast<long long>(f.max) + 1)).is_ok()) << f.name;
      }
    }
    if (f.type == FieldType::choice) {
      const Status st = f.assign(c, "bogus");
      EXPECT_FALSE(st.is_ok());
      EXPECT_NE(st.message().find(std::string(f.choices[0])), std::string::npos) << "lists the valid values: " << st.message();
    }
    if (f.type == FieldType::boolean) {
      EXPECT_FALSE(f.assign(c, "maybe").is_ok());
    }
    EXPECT_EQ(f.value(c), before) << f.name << " changed by a refused value";
  }
}

TEST(RunFields, MetadataCarriesEveryFieldAndReadsBack) {
  const RunConfig alt = alternate_config();
  std::map<std::string, std::string> meta;
  to_meta(alt, meta);
  for (const RunField& f : run_fields()) EXPECT_EQ(meta.count(std::string(f.name)), 1u) << f.name << " missing from the metadata";
  RunConfig back;
  std::vector<std::string> problems;
  EXPECT_TRUE(from_meta(meta, back, problems));
  EXPECT_TRUE(problems.empty());
  for (const RunField& f : run_fields()) EXPECT_EQ(f.value(back), f.value(alt)) << f.name;
}

TEST(RunFields, NonsenseMetadataIsRefusedAndNamed) {
  std::map<std::string, std::string> meta{{"warmup", "-7"}, {"batch", "abc"}, {"workers", "4"}};
  RunConfig c;
  std::vector<std::string> problems;
  EXPECT_TRUE(from_meta(meta, c, problems));
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(c.workers, 4);
  EXPECT_EQ(c.warmup, RunConfig{}.warmup);
  EXPECT_NE(problems[0].find("batch"), std::string::npos);
  RunConfig none;
  problems.clear();
  EXPECT_FALSE(from_meta({{"something", "else"}}, none, problems));
}

TEST(RunFields, SummaryLineShowsEveryFieldThatDiffersFromItsDefault) {
  for (const RunField& f : run_fields()) {
    RunConfig c;
    ASSERT_TRUE(f.assign(c, alternate_value(f)).is_ok());
    const std::string line = summary_line(c);
    EXPECT_NE(line.find(f.option() + " " + f.value(c)), std::string::npos) << f.name << " not in: " << line;
  }
  const std::string plain = summary_line(RunConfig{});
  EXPECT_NE(plain.find("workers 4"), std::string::npos);
  EXPECT_EQ(plain.find("cold-cache"), std::string::npos) << "defaults of optional knobs stay out: " << plain;
}

TEST(RunFields, ResumeSignatureChangesWithEveryComparableField) {
  const std::string base = comparable_signature(RunConfig{});
  for (const RunField& f : run_fields()) {
    RunConfig c;
    ASSERT_TRUE(f.assign(c, alternate_value(f)).is_ok());
    if (f.has(kSweepAxis) || f.has(kNotCompared)) EXPECT_EQ(comparable_signature(c), base) << f.name;
    else EXPECT_NE(comparable_signature(c), base) << f.name << " would let --resume mix incomparable points";
  }
}

}  // namespace
}  // namespace stalldx

namespace stalldx {
TEST(RunFields, RankOverridesApplyToTheirRankOnlyAndBadOnesFailEveryRank) {
  RunConfig c;
  c.world_size = 3;
  c.rank_override = "2:read-latency-ms=20,1:workers=1,2:workers=8";
  RunConfig r0 = c, r2 = c;
  r2.rank = 2;
  ASSERT_TRUE(apply_rank_overrides(r0).is_ok());
  ASSERT_TRUE(apply_rank_overrides(r2).is_ok());
  EXPECT_EQ(r0.read_latency_ms, 0);
  EXPECT_EQ(r0.workers, c.workers);
  EXPECT_EQ(r2.read_latency_ms, 20);
  EXPECT_EQ(r2.workers, 8);
  for (const char* bad : {"2:nope=1", "5:workers=2", "x:workers=2", "1workers=2", "1:workers=0", "1:world-size=2", "0:rank=1", "1:steps=5",
                          "1:warmup=0", "1:allreduce-mb=2", "1:collective=none"}) {
    RunConfig b = c;
    b.rank_override = bad;
    const Status st = apply_rank_overrides(b);
    EXPECT_FALSE(st.is_ok()) << bad;
    EXPECT_NE(st.message().find(bad), std::string::npos) << st.message();
  }
}
}  // namespace stalldx

namespace stalldx {
namespace {
// docs/configuration.md is the field table's own text: adding or changing an option without the page
// fails here (the expected page is written beside the test's build folder to copy over).
TEST(ConfigurationReference, TheDocsPageIsTheFieldTable) {
  const std::string page = std::string(STALLDX_SOURCE_DIR) + "/docs/configuration.md";
  const std::string expected = run_config_reference();
  std::string actual;
  {
    std::ifstream in(page);
    std::stringstream ss;
    ss << in.rdbuf();
    actual = ss.str();
  }
  if (actual != expected) {
    std::ofstream("configuration.md") << expected;
    ADD_FAILURE() << page << " differs from the field table: copy " << std::filesystem::current_path().string()
                  << "/configuration.md over it";
  }
  for (const RunField& f : run_fields()) EXPECT_NE(expected.find("`--" + f.option() + "`"), std::string::npos) << f.option();
}
}  // namespace
}  // namespace stalldx

namespace stalldx {
namespace {
// Fields are reached by member, not by their key's text: every field has its own member identity.
TEST(RunFieldByMember, EveryFieldIsFoundByItsMember) {
  for (const RunField& f : run_fields()) {
    ASSERT_NE(f.member, nullptr) << f.name;
    EXPECT_EQ(find_run_field_of(f.member), &f) << f.name;
  }
  EXPECT_EQ(&run_field<&RunConfig::workers>(), find_run_field("workers"));
  EXPECT_EQ(&run_field<&RunConfig::read_bandwidth_mbps>(), find_run_field("read-bandwidth-mbps"));
  EXPECT_EQ(&run_field<&RunConfig::output>(), find_run_field("output"));  // a choice field
}
}  // namespace
}  // namespace stalldx
