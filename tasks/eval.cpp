#include "stalldx/tasks/eval.h"

#include <fmt/format.h>

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include "stalldx/output_file.h"
#include "stalldx/text.h"
#include "stalldx/toml_guard.h"
#include "stalldx/run_config.h"
#include "stalldx/tasks/child_process.h"
#include "stalldx/trace_io.h"

namespace fs = std::filesystem;

namespace stalldx::tasks {

namespace {
bool safe_file_stem(const std::string& name) {
  if (name.empty() || name.size() > 100 || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  });
}
}  // namespace

Status load_scenarios(const std::string& path, std::vector<Scenario>& out) {
  out.clear();
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
    // The name becomes file names under --out: nothing may land outside it (no '/', no '..', no hidden name).
    if (!safe_file_stem(s.name))
      return Status::invalid(fmt::format("{}:{}: scenario name '{}' is not a plain file name (letters, digits, '.', '_', '-'; "
                                         "not starting with '.'; at most 100)", path, lineno, to_valid_utf8(s.name)));
    if (Status st = diagnose::Expectation::parse(spec, s.expect); !st.is_ok())
      return Status::invalid(fmt::format("{}:{}: {}", path, lineno, st.message()));
    if (!fs::exists(s.config)) return Status::invalid(fmt::format("{}:{}: config '{}' does not exist", path, lineno, s.config));
    out.push_back(std::move(s));
  }
  if (out.empty()) return Status::invalid(fmt::format("no scenarios in '{}'", path));
  return Status::ok();
}

namespace {
// The warm-up a scenario's config sets ([run] warmup), else the run default: a recorded trace does not
// carry the run's config, so eval --record diagnoses with this.
int scenario_warmup(const std::string& config) {
  int warmup = RunConfig{}.warmup;
  std::ifstream in(config, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::string safe;  // toml++ 3.3 must not see some code points (toml_guard.h)
  if (!in || !guard_toml_text(text.str(), config, safe).is_ok()) return warmup;
  toml::parse_result parsed = toml::parse(std::string_view(safe), std::string_view(config));
  if (parsed)
    if (auto w = parsed.table()["run"]["warmup"].value<std::int64_t>()) warmup = static_cast<int>(*w);
  return warmup;
}
}  // namespace

Status run_eval(const EvalOptions& o, EvalResult& result, const StopFlag* stop, const std::function<void(const std::string&)>& log) {
  result = EvalResult{};
  std::vector<Scenario> scenarios;
  if (Status st = load_scenarios(o.scenarios, scenarios); !st.is_ok()) return st;
  if (!o.only.empty() && std::none_of(scenarios.begin(), scenarios.end(), [&](const Scenario& s) { return s.name == o.only; }))
    return Status::invalid(fmt::format("--only '{}': no scenario of that name in '{}'", o.only, o.scenarios));
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) return Status::io(fmt::format("cannot create '{}': {}", o.out, ec.message()));
  // Every file of this evaluation goes to a staging folder inside --out and replaces the previous
  // results only once the evaluation is complete: an interrupted or failed one leaves them as they were.
  std::string stage = (fs::path(o.out) / ".stalldx-eval-XXXXXX").string();
  if (mkdtemp(stage.data()) == nullptr) return Status::io(fmt::format("cannot create a staging folder in '{}': {}", o.out, std::strerror(errno)));
  struct Cleanup {
    const std::string& dir;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(dir, e);
    }
  } cleanup{stage};
  // Where a staged file will be once published (for messages).
  auto published = [&](const std::string& staged) { return o.out + staged.substr(stage.size()); };
  auto say = [&](const std::string& s) { if (log) log(s); };
  for (const Scenario& s : scenarios) {
    if (!o.only.empty() && s.name != o.only) continue;
    if (stop != nullptr && stop->stopped()) { result.interrupted = true; break; }
    const std::string trace = fmt::format("{}/{}.json", stage, s.name);
    diagnose::Thresholds th;
    if (o.record) th.warmup_steps = scenario_warmup(s.config);
    // One child run, its trace read back. `fatal`: the child could not be started (eval stops);
    // `failure`: the scenario's run or trace failed (counted, eval goes on).
    struct Outcome {
      Status fatal, failure;
      bool stopped = false;
    };
    auto run_one = [&](bool recorded, const std::string& trace_path, Trace& t) {
      Outcome out;
      const std::string log_path = trace_path.substr(0, trace_path.size() - 5) + ".log";
      std::vector<std::string> argv{o.stalldx, "run", "--config", s.config, "--trace", trace_path};
      if (recorded) {
        argv = {o.stalldx, "record", "--trace", trace_path, "--warmup", std::to_string(th.warmup_steps)};
        for (std::size_t b = 0, e; b < o.record_args.size(); b = e + 1) {
          e = std::min(o.record_args.find(' ', b), o.record_args.size());
          if (e > b) argv.push_back(o.record_args.substr(b, e - b));
        }
        argv.push_back("--");
        for (const std::string& a : {o.stalldx, std::string("run"), std::string("--config"), s.config, std::string("--nvtx-only")}) argv.push_back(a);
      }
      if (!o.data.empty()) { argv.push_back("--data"); argv.push_back(o.data); }
      ChildResult child;
      if (out.fatal = run_child(argv, log_path, child, stop); !out.fatal.is_ok()) return out;
      out.stopped = child.stopped;
      if (out.stopped) return out;
      out.failure = child.exited && child.code == 0
                        ? read_trace_file(trace_path, t)
                        : Status::internal(child.exited ? fmt::format("run failed (exit {}), see {}", child.code, published(log_path))
                                                        : fmt::format("run killed by signal {}, see {}", child.signal, published(log_path)));
      return out;
    };
    say(fmt::format("{} ...", s.name));
    Trace native, t;
    if (o.record && o.against_native) {
      const Outcome n = run_one(false, fmt::format("{}/{}.native.json", stage, s.name), native);
      if (!n.fatal.is_ok()) return n.fatal;
      if (n.stopped) { result.interrupted = true; break; }
      if (!n.failure.is_ok()) {
        result.failures.push_back(fmt::format("scenario {} (native run): {}", s.name, n.failure.message()));
        continue;
      }
    }
    const Outcome r = run_one(o.record, trace, t);
    if (!r.fatal.is_ok()) return r.fatal;
    if (r.stopped) { result.interrupted = true; break; }
    if (!r.failure.is_ok()) {
      result.failures.push_back(fmt::format("scenario {}: {}", s.name, r.failure.message()));
      continue;
    }
    const diagnose::Report rep = diagnose::diagnose(t, th);
    result.scores.push_back(diagnose::score(s.name, rep, s.expect));
    if (o.record && o.against_native) {
      const diagnose::Report native_rep = diagnose::diagnose(native, diagnose::Thresholds{});
      result.native_scores.push_back(diagnose::score(s.name, native_rep, s.expect));
      result.agreements.push_back(diagnose::agreement(s.name, native_rep, rep));
      const diagnose::Agreement& a = result.agreements.back();
      std::string windows;
      if (rep.coverage.sampled) {  // the steps inside device windows alone, as the sampled recording's claim
        diagnose::Report in_windows = rep;
        std::erase_if(in_windows.steps, [](const diagnose::StepDiagnosis& st) { return st.basis != diagnose::StepBasis::device; });
        const diagnose::Agreement w = diagnose::agreement(s.name, native_rep, in_windows);
        windows = fmt::format(" | in device windows {} of {} ({:.0f}%)", w.same, w.steps, 100 * w.rate);
      }
      result.agreement_text += fmt::format("  {:<28} native {:>3.0f}% | recorded {:>3.0f}% | {:>3} of {:>3} steady steps agree ({:.0f}%){}{}\n", a.name,
                                           100 * result.native_scores.back().accuracy, 100 * result.scores.back().accuracy, a.same, a.steps,
                                           100 * a.rate, windows, a.differ.empty() ? "" : "; " + a.differ.front() + (a.differ.size() > 1 ? ", ..." : ""));
      if (a.rate < o.min_accuracy)
        result.failures.push_back(fmt::format("scenario {}: recorded and native verdicts agree on {:.0f}% of steps (< {:.0f}%)", s.name,
                                              100 * a.rate, 100 * o.min_accuracy));
    }
    if (o.keep_steps > 0) {
      if (Status ws = write_trace_file(diagnose::trim_steps(t, o.keep_steps), fmt::format("{}/{}.trimmed.json", stage, s.name)); !ws.is_ok())
        return ws;
      if (o.record && o.against_native)
        if (Status ws = write_trace_file(diagnose::trim_steps(native, o.keep_steps), fmt::format("{}/{}.native.trimmed.json", stage, s.name));
            !ws.is_ok())
          return ws;
    }
    const diagnose::ScenarioScore& sc = result.scores.back();
    if (sc.accuracy < o.min_accuracy) {
      std::string f = fmt::format("scenario {} scored {:.0f}% (< {:.0f}%):", s.name, 100 * sc.accuracy, 100 * o.min_accuracy);
      for (const std::string& m : sc.misses) f += "\n    " + m;
      result.failures.push_back(std::move(f));
    }
  }
  if (result.interrupted) return Status::ok();  // the previous results stay (the staging folder goes)
  result.confusion_text = diagnose::confusion_text(result.scores);
  result.confusion_json = diagnose::confusion_json(result.scores);
  if (Status st = write_file_atomic(stage + "/confusion.txt", result.confusion_text); !st.is_ok()) return st;
  if (Status st = write_file_atomic(stage + "/confusion.json", result.confusion_json); !st.is_ok()) return st;
  if (!result.agreement_text.empty())
    result.agreement_text = "accuracy natively and under record, and per-step agreement of the two verdicts:\n" + result.agreement_text;
  if (!result.agreement_text.empty())
    if (Status st = write_file_atomic(stage + "/agreement.txt", result.agreement_text); !st.is_ok()) return st;
  if (Status st = write_file_atomic(stage + "/eval.html", diagnose::eval_html(result.scores)); !st.is_ok()) return st;
  // Complete: publish (one rename per file, same file system).
  for (const fs::directory_entry& e : fs::directory_iterator(stage, ec)) {
    const fs::path to = fs::path(o.out) / e.path().filename();
    if (fs::rename(e.path(), to, ec); ec) return Status::io(fmt::format("cannot move {} to {}: {}", e.path().string(), to.string(), ec.message()));
  }
  return Status::ok();
}

}  // namespace stalldx::tasks
