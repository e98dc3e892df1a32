// The CLI11 binding of the run field table: every field is an option and a TOML key, values go through
// the field's own parser (so bounds hold on the command line and in configs alike), and the JSON report
// carries every field.
#include <gtest/gtest.h>

#include <limits>

#include "core/field_values.h"
#include "run_options.h"
#include "stalldx/pipeline/runner.h"
#include "stalldx/tasks/run_report.h"
#include "test_support.h"

namespace stalldx::cli {
namespace {

using testing::alternate_value;

std::vector<std::string> args_for(const RunField& f, const std::string& value) {
  if (f.has(kNegatedFlag)) return value == "false" ? std::vector<std::string>{"--no-" + f.option()} : std::vector<std::string>{};
  if (f.has(kFlag)) return value == "true" ? std::vector<std::string>{"--" + f.option()} : std::vector<std::string>{};
  return {"--" + f.option(), value};
}

TEST(RunOptions, EveryFieldIsAnOptionThatSetsIt) {
  for (const RunField& f : run_fields()) {
    CLI::App app;
    RunConfig c;
    add_run_options(app, c);
    const std::string alt = alternate_value(f);
    std::vector<std::string> args = args_for(f, alt);
    ASSERT_FALSE(args.empty()) << f.name;
    std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
    ASSERT_NO_THROW(app.parse(args)) << f.name;
    EXPECT_EQ(f.value(c), alt) << f.name;
  }
}

TEST(RunOptions, SweepLeavesOutItsAxesAndRunOnlyFields) {
  CLI::App app;
  RunConfig c;
  add_run_options(app, c, OptionSet::sweep);
  for (const RunField& f : run_fields()) {
    const bool present = app.get_option_no_throw("--" + f.option()) != nullptr || app.get_option_no_throw("--no-" + f.option()) != nullptr;
    EXPECT_EQ(present, !(f.has(kSweepAxis) || f.has(kRunOnly))) << f.name;
  }
}

TEST(RunOptions, BadValuesAreRefusedOnTheCommandLine) {
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"nan", "--step-ms"}, {"inf", "--device-ms"},
                                             {"1e12", "--read-latency-ms"}, {"0", "--workers"}, {"fp16", "--output"}}) {
    CLI::App app;
    RunConfig c;
    add_run_options(app, c);
    std::vector<std::string> args = bad;
    EXPECT_THROW(app.parse(args), CLI::ParseError) << bad[1] << " " << bad[0];
  }
  // Values each field takes alone but that are absurd: refused by validate() before anything runs.
  RunConfig c;
  c.read_bandwidth_mbps = 0.0001;
  EXPECT_EQ(pipeline::validate(c).code(), Status::Code::invalid_argument);
  c = RunConfig{};
  c.step_ms = std::numeric_limits<double>::quiet_NaN();  // set in code, not parsed
  EXPECT_EQ(pipeline::validate(c).code(), Status::Code::invalid_argument);
}

TEST(RunOptions, EveryFieldIsATomlKey) {
  const std::string dir = testing::temp_dir("toml");
  std::string toml = "[run]\n";
  for (const RunField& f : run_fields()) {
    const std::string alt = alternate_value(f);
    const std::string key = f.has(kNegatedFlag) ? "no-" + f.option() : f.option();
    const std::string value = f.has(kNegatedFlag) ? (alt == "false" ? "true" : "false")
                            : f.type == FieldType::text || f.type == FieldType::choice ? "\"" + alt + "\"" : alt;
    toml += key + " = " + value + "\n";
  }
  testing::write_file(dir + "/all.toml", toml);
  CLI::App app;
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.set_config("--config");
  RunConfig c;
  CLI::App* run = app.add_subcommand("run");
  add_run_options(*run, c);
  run->fallthrough();
  std::vector<std::string> args{"--config", dir + "/all.toml", "run"};
  std::reverse(args.begin(), args.end());
  ASSERT_NO_THROW(app.parse(args)) << toml;
  for (const RunField& f : run_fields()) EXPECT_EQ(f.value(c), alternate_value(f)) << f.name;
}

TEST(RunOptions, JsonReportCarriesEveryField) {
  const RunConfig alt = testing::alternate_config();
  const nlohmann::json j = tasks::run_config_json(alt);
  for (const RunField& f : run_fields()) {
    ASSERT_TRUE(j.contains(std::string(f.name))) << f.name;
    const nlohmann::json& v = j.at(std::string(f.name));
    const std::string text = v.is_string() ? v.get<std::string>() : v.is_boolean() ? (v.get<bool>() ? "true" : "false") : v.dump();
    RunConfig probe;
    ASSERT_TRUE(f.assign(probe, text).is_ok()) << f.name << " = " << text;
    EXPECT_EQ(f.value(probe), f.value(alt)) << f.name;
  }
}

}  // namespace
}  // namespace stalldx::cli
