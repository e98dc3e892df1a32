// `stalldx eval SCENARIOS.tsv`: runs every scenario (this executable's own `run --config`, profiled,
// with a trace), diagnoses each trace and prints the confusion matrix and per-scenario accuracy.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <sys/wait.h>

#include "commands.h"
#include "evaluation.h"
#include "stalldx/trace_io.h"

namespace fs = std::filesystem;

namespace stalldx::cli {

namespace {
struct EvalArgs {
  std::string scenarios, out = "eval-out", data, only;
  int keep_steps = 0;
  double min_accuracy = 0.95;
  bool json = false;
};

struct Scenario {
  std::string name, config;
  diagnose::Expectation expect;
};

Status load_scenarios(const std::string& path, std::vector<Scenario>& out) {
  std::ifstream in(path);
  if (!in) return Status::invalid(fmt::format("cannot open scenario list '{}'", path));
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    Scenario s;
    std::string spec;
    std::getline(ss, s.name, '\t');
    std::getline(ss, s.config, '\t');
    std::getline(ss, spec, '\t');
    if (s.name.empty() || s.config.empty() || spec.empty())
      return Status::invalid(fmt::format("{}:{}: expected 'name<TAB>config<TAB>expected'", path, lineno));
    if (Status st = diagnose::Expectation::parse(spec, s.expect); !st.is_ok())
      return Status::invalid(fmt::format("{}:{}: {}", path, lineno, st.message()));
    if (!fs::exists(s.config)) return Status::invalid(fmt::format("{}:{}: config '{}' does not exist", path, lineno, s.config));
    out.push_back(std::move(s));
  }
  if (out.empty()) return Status::invalid(fmt::format("no scenarios in '{}'", path));
  return Status::ok();
}
}  // namespace

Action add_eval_command(CLI::App& app) {
  auto a = std::make_shared<EvalArgs>();
  CLI::App* sub = app.add_subcommand("eval", "run induced-stall scenarios and score the verdicts (confusion matrix)");
  sub->add_option("scenarios", a->scenarios, "TSV: name, config, expected class (see configs/scenarios-*.tsv)")->required();
  sub->add_option("--out", a->out, "folder for traces, logs and the results")->capture_default_str();
  sub->add_option("--data", a->data, "dataset for every scenario (default: the built-in set)");
  sub->add_option("--only", a->only, "run only the scenario of this name");
  sub->add_option("--keep-steps", a->keep_steps, "also write NAME.trimmed.json with this many steady steps (0 = no)");
  sub->add_option("--min-accuracy", a->min_accuracy, "fail (exit 1) when a scenario scores below this")->capture_default_str();
  sub->add_flag("--json", a->json, "print the results as JSON");
  return [a] {
    std::vector<Scenario> scenarios;
    if (Status st = load_scenarios(a->scenarios, scenarios); !st.is_ok()) {
      fmt::print(stderr, "stalldx eval: {}\n", st.message());
      return 2;
    }
    std::error_code ec;
    fs::create_directories(a->out, ec);
    const std::string self = fs::read_symlink("/proc/self/exe", ec).string();
    std::vector<diagnose::ScenarioScore> scores;
    int failed = 0;
    for (const Scenario& s : scenarios) {
      if (!a->only.empty() && s.name != a->only) continue;
      if (stop_requested().load()) return 130;
      const std::string trace = fmt::format("{}/{}.json", a->out, s.name), log = fmt::format("{}/{}.log", a->out, s.name);
      const std::string cmd = fmt::format("'{}' run --config '{}' --trace '{}'{} > '{}' 2>&1", self, s.config, trace,
                                          a->data.empty() ? "" : fmt::format(" --data '{}'", a->data), log);
      fmt::print(stderr, "stalldx eval: {} ...\n", s.name);
      const int rc = std::system(cmd.c_str());
      Trace t;
      Status st = (WIFEXITED(rc) && WEXITSTATUS(rc) == 0) ? read_trace_file(trace, t)
                                                          : Status::internal(fmt::format("run failed (exit {}), see {}", WEXITSTATUS(rc), log));
      if (!st.is_ok()) {
        fmt::print(stderr, "stalldx eval: scenario {}: {}\n", s.name, st.message());
        ++failed;
        continue;
      }
      const diagnose::Report rep = diagnose::diagnose(t);
      scores.push_back(diagnose::score(s.name, rep, s.expect));
      if (a->keep_steps > 0) {
        Status ws = write_trace_file(diagnose::trim_steps(t, a->keep_steps), fmt::format("{}/{}.trimmed.json", a->out, s.name));
        if (!ws.is_ok()) fmt::print(stderr, "stalldx eval: {}\n", ws.message());
      }
      const diagnose::ScenarioScore& sc = scores.back();
      if (sc.accuracy < a->min_accuracy) {
        ++failed;
        fmt::print(stderr, "stalldx eval: scenario {} scored {:.0f}% (< {:.0f}%):\n", s.name, 100 * sc.accuracy, 100 * a->min_accuracy);
        for (const std::string& m : sc.misses) fmt::print(stderr, "    {}\n", m);
      }
    }
    const std::string text = diagnose::confusion_text(scores);
    std::ofstream(fmt::format("{}/confusion.txt", a->out)) << text;
    std::ofstream(fmt::format("{}/confusion.json", a->out)) << diagnose::confusion_json(scores);
    if (a->json) std::cout << diagnose::confusion_json(scores) << "\n";
    else std::cout << text;
    return failed ? 1 : 0;
  };
}

}  // namespace stalldx::cli
