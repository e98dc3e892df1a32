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
#include "stalldx/tsv.h"

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

namespace {
// A scenario's config as the list names it: an absolute path, or a relative one from the current folder,
// else from the list's folder or the nearest folder above it where it exists (configs/scenarios-cpu.tsv
// names configs/scenarios-cpu/x.toml from the repository's root). `config` becomes the path found.
bool find_config(const std::string& list, std::string& config) {
  std::error_code ec;
  if (fs::exists(config, ec)) return true;
  if (fs::path(config).is_absolute()) return false;
  for (fs::path dir = fs::absolute(list, ec).parent_path(); !ec && !dir.empty(); dir = dir.parent_path()) {
    if (fs::exists(dir / config, ec)) {
      config = (dir / config).string();
      return true;
    }
    if (dir == dir.root_path()) break;
  }
  return false;
}
}  // namespace

Status load_scenarios(const std::string& path, std::vector<Scenario>& out) {
  out.clear();
  std::ifstream in(path);
  if (!in) return Status::invalid(fmt::format("cannot open scenario list '{}'", path));
  TsvRows rows(in);
  std::vector<std::string> f;
  while (rows.next(f)) {
    const std::size_t lineno = rows.lineno();
    f.resize(std::max<std::size_t>(f.size(), 3));
    Scenario s{f[0], f[1]};
    const std::string& spec = f[2];
    if (s.name.empty() || s.config.empty() || spec.empty())
      return Status::invalid(fmt::format("{}:{}: expected 'name<TAB>config<TAB>expected'", path, lineno));
    // The name becomes file names under --out: nothing may land outside it (no '/', no '..', no hidden name).
    if (!safe_file_stem(s.name))
      return Status::invalid(fmt::format("{}:{}: scenario name '{}' is not a plain file name (letters, digits, '.', '_', '-'; "
                                         "not starting with '.'; at most 100)", path, lineno, to_valid_utf8(s.name)));
    if (Status st = diagnose::Expectation::parse(spec, s.expect); !st.is_ok())
      return Status::invalid(fmt::format("{}:{}: {}", path, lineno, st.message()));
    if (!find_config(path, s.config))
      return Status::invalid(fmt::format("{}:{}: config '{}' does not exist (looked from the current folder, and from the list's "
                                         "folder and those above it)", path, lineno, s.config));
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

namespace {

// One child run's outcome. `fatal`: the child could not be started (the evaluation stops); `failure`:
// the scenario's run or trace failed (counted, the evaluation goes on).
struct Outcome {
  Status fatal, failure;
  bool stopped = false;
};

// One evaluation: every file goes to a staging folder inside --out and replaces the previous results only
// once the evaluation is complete, so an interrupted or failed one leaves them as they were.
class Evaluation {
 public:
  Evaluation(const EvalOptions& o, EvalResult& result, const StopFlag* stop, const std::function<void(const std::string&)>& log)
      : o_(o), result_(result), stop_(stop), log_(log) {}
  ~Evaluation() {
    std::error_code e;
    if (!stage_.empty()) fs::remove_all(stage_, e);
  }

  Status run(const std::vector<Scenario>& scenarios) {
    std::error_code ec;
    fs::create_directories(o_.out, ec);
    if (ec) return Status::io(fmt::format("cannot create '{}': {}", o_.out, ec.message()));
    std::string stage = (fs::path(o_.out) / ".stalldx-eval-XXXXXX").string();
    if (mkdtemp(stage.data()) == nullptr) return Status::io(fmt::format("cannot create a staging folder in '{}': {}", o_.out, std::strerror(errno)));
    stage_ = stage;
    for (const Scenario& s : scenarios) {
      if (!o_.only.empty() && s.name != o_.only) continue;
      if (stop_ != nullptr && stop_->stopped()) result_.interrupted = true;
      if (result_.interrupted) break;
      if (Status st = scenario(s); !st.is_ok()) return st;
    }
    if (result_.interrupted) return Status::ok();  // the previous results stay (the staging folder goes)
    return publish();
  }

 private:
  // Where a staged file will be once published (for messages).
  std::string published(const std::string& staged) const { return o_.out + staged.substr(stage_.size()); }

  // `stalldx run` on the scenario's config, natively or (recorded) as `run --nvtx-only` under `stalldx record`.
  std::vector<std::string> child_argv(const Scenario& s, bool recorded, const std::string& trace_path, int warmup) const {
    std::vector<std::string> argv{o_.stalldx, "run", "--config", s.config, "--trace", trace_path};
    if (recorded) {
      argv = {o_.stalldx, "record", "--trace", trace_path, "--warmup", std::to_string(warmup)};
      for (std::size_t b = 0, e; b < o_.record_args.size(); b = e + 1) {
        e = std::min(o_.record_args.find(' ', b), o_.record_args.size());
        if (e > b) argv.push_back(o_.record_args.substr(b, e - b));
      }
      argv.push_back("--");
      for (const std::string& a : {o_.stalldx, std::string("run"), std::string("--config"), s.config, std::string("--nvtx-only")}) argv.push_back(a);
    }
    if (!o_.data.empty()) {
      argv.push_back("--data");
      argv.push_back(o_.data);
    }
    return argv;
  }

  // One child run, its trace read back into `t`.
  Outcome run_one(const Scenario& s, bool recorded, const std::string& trace_path, int warmup, Trace& t) const {
    Outcome out;
    const std::string log_path = trace_path.substr(0, trace_path.size() - 5) + ".log";
    ChildResult child;
    if (out.fatal = run_child(child_argv(s, recorded, trace_path, warmup), log_path, child, stop_); !out.fatal.is_ok()) return out;
    out.stopped = child.stopped;
    if (out.stopped) return out;
    out.failure = child.exited && child.code == 0
                      ? read_trace_file(trace_path, t)
                      : Status::internal(child.exited ? fmt::format("run failed (exit {}), see {}", child.code, published(log_path))
                                                      : fmt::format("run killed by signal {}, see {}", child.signal, published(log_path)));
    return out;
  }

  // Runs the scenario (natively first, when compared), scores it, compares, keeps trimmed traces.
  Status scenario(const Scenario& s) {
    diagnose::Thresholds th;
    if (o_.record) th.warmup_steps = scenario_warmup(s.config);
    if (log_) log_(fmt::format("{} ...", s.name));
    const bool compare = o_.record && o_.against_native;
    Trace native, t;
    if (compare) {
      const Outcome n = run_one(s, false, fmt::format("{}/{}.native.json", stage_, s.name), th.warmup_steps, native);
      if (!n.fatal.is_ok()) return n.fatal;
      result_.interrupted = n.stopped;
      if (n.stopped) return Status::ok();
      if (!n.failure.is_ok()) {
        result_.failures.push_back(fmt::format("scenario {} (native run): {}", s.name, n.failure.message()));
        return Status::ok();
      }
    }
    const Outcome r = run_one(s, o_.record, fmt::format("{}/{}.json", stage_, s.name), th.warmup_steps, t);
    if (!r.fatal.is_ok()) return r.fatal;
    result_.interrupted = r.stopped;
    if (r.stopped) return Status::ok();
    if (!r.failure.is_ok()) {
      result_.failures.push_back(fmt::format("scenario {}: {}", s.name, r.failure.message()));
      return Status::ok();
    }
    const diagnose::Report rep = diagnose::diagnose(t, th);
    result_.scores.push_back(diagnose::score(s.name, rep, s.expect));
    const diagnose::Report native_rep = compare ? compare_with_native(s, native, rep) : diagnose::Report{};
    if (o_.sampled_view && compare) compare_with_view(s, native, native_rep, diagnose::Thresholds{});  // a full trace: the native one
    else if (o_.sampled_view) compare_with_view(s, t, rep, th);
    if (o_.keep_steps > 0) {
      if (Status ws = write_trace_file(diagnose::trim_steps(t, o_.keep_steps), fmt::format("{}/{}.trimmed.json", stage_, s.name)); !ws.is_ok())
        return ws;
      if (compare)
        if (Status ws = write_trace_file(diagnose::trim_steps(native, o_.keep_steps), fmt::format("{}/{}.native.trimmed.json", stage_, s.name));
            !ws.is_ok())
          return ws;
    }
    const diagnose::ScenarioScore& sc = result_.scores.back();
    if (sc.accuracy < o_.min_accuracy) {
      std::string f = fmt::format("scenario {} scored {:.0f}% (< {:.0f}%):", s.name, 100 * sc.accuracy, 100 * o_.min_accuracy);
      for (const std::string& m : sc.misses) f += "\n    " + m;
      result_.failures.push_back(std::move(f));
    }
    return Status::ok();
  }

  // The native run's verdicts against the recorded ones, step by step (and inside device windows alone,
  // the sampled recording's claim): one line of the agreement table, a failure under --min-accuracy.
  // Returns the native run's diagnosis.
  diagnose::Report compare_with_native(const Scenario& s, const Trace& native, const diagnose::Report& rep) {
    const diagnose::Report native_rep = diagnose::diagnose(native, diagnose::Thresholds{});
    result_.native_scores.push_back(diagnose::score(s.name, native_rep, s.expect));
    result_.agreements.push_back(diagnose::agreement(s.name, native_rep, rep));
    const diagnose::Agreement& a = result_.agreements.back();
    std::string windows;
    if (rep.coverage.sampled) {
      diagnose::Report in_windows = rep;
      std::erase_if(in_windows.steps, [](const diagnose::StepDiagnosis& st) { return st.basis != diagnose::StepBasis::device; });
      const diagnose::Agreement w = diagnose::agreement(s.name, native_rep, in_windows);
      windows = fmt::format(" | in device windows {} of {} ({:.0f}%)", w.same, w.steps, 100 * w.rate);
    }
    result_.agreement_text += fmt::format("  {:<28} native {:>3.0f}% | recorded {:>3.0f}% | {:>3} of {:>3} steady steps agree ({:.0f}%){}{}\n", a.name,
                                          100 * result_.native_scores.back().accuracy, 100 * result_.scores.back().accuracy, a.same, a.steps,
                                          100 * a.rate, windows, a.differ.empty() ? "" : "; " + a.differ.front() + (a.differ.size() > 1 ? ", ..." : ""));
    if (a.rate < o_.min_accuracy)
      result_.failures.push_back(fmt::format("scenario {}: recorded and native verdicts agree on {:.0f}% of steps (< {:.0f}%)", s.name,
                                             100 * a.rate, 100 * o_.min_accuracy));
    return native_rep;
  }

  // The full trace `t` (diagnosed as `rep` with `th`) seen as the sampled plan would have recorded it,
  // diagnosed, against `rep`: every steady step, and those carried from a window or judged from host
  // records alone.
  void compare_with_view(const Scenario& s, const Trace& t, const diagnose::Report& rep, const diagnose::Thresholds& th) {
    const diagnose::Report view = diagnose::diagnose(record::sampled_view(t, *o_.sampled_view), th);
    result_.view_agreements.push_back(diagnose::agreement(s.name, rep, view));
    const diagnose::Agreement& a = result_.view_agreements.back();
    diagnose::Report outside = view;
    std::erase_if(outside.steps, [](const diagnose::StepDiagnosis& st) { return st.basis == diagnose::StepBasis::device; });
    const diagnose::Agreement o = diagnose::agreement(s.name, rep, outside);
    result_.view_text += fmt::format("  {:<28} {:>3} of {:>3} steady steps agree ({:.0f}%) | outside the windows {} of {} ({:.0f}%){}\n", a.name,
                                     a.same, a.steps, 100 * a.rate, o.same, o.steps, o.steps ? 100 * o.rate : 100.0,
                                     a.differ.empty() ? "" : "; " + a.differ.front() + (a.differ.size() > 1 ? ", ..." : ""));
    if (a.rate < o_.min_accuracy)
      result_.failures.push_back(fmt::format("scenario {}: its sampled view ({}) agrees with the full diagnosis on {:.0f}% of steps (< {:.0f}%)",
                                             s.name, o_.sampled_view->text(), 100 * a.rate, 100 * o_.min_accuracy));
  }

  // The tables written into the staging folder, then every staged file moved into --out (one rename
  // each, same file system).
  Status publish() {
    result_.confusion_text = diagnose::confusion_text(result_.scores);
    result_.confusion_json = diagnose::confusion_json(result_.scores);
    if (Status st = write_file_atomic(stage_ + "/confusion.txt", result_.confusion_text); !st.is_ok()) return st;
    if (Status st = write_file_atomic(stage_ + "/confusion.json", result_.confusion_json); !st.is_ok()) return st;
    if (!result_.agreement_text.empty()) {
      result_.agreement_text = "accuracy natively and under record, and per-step agreement of the two verdicts:\n" + result_.agreement_text;
      if (Status st = write_file_atomic(stage_ + "/agreement.txt", result_.agreement_text); !st.is_ok()) return st;
    }
    if (!result_.view_text.empty()) {
      result_.view_text = fmt::format("the same traces seen as a recording sampled {} ({}) would have seen them, per step against the "
                                      "full diagnosis (native marks the full one, recorded the sampled view):\n",
                                      o_.sampled_view->text(), o_.sampled_view->words()) + result_.view_text;
      if (Status st = write_file_atomic(stage_ + "/agreement-sampled-view.txt", result_.view_text); !st.is_ok()) return st;
    }
    if (Status st = write_file_atomic(stage_ + "/eval.html", diagnose::eval_html(result_.scores)); !st.is_ok()) return st;
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(stage_, ec)) {
      const fs::path to = fs::path(o_.out) / e.path().filename();
      if (fs::rename(e.path(), to, ec); ec) return Status::io(fmt::format("cannot move {} to {}: {}", e.path().string(), to.string(), ec.message()));
    }
    return Status::ok();
  }

  const EvalOptions& o_;
  EvalResult& result_;
  const StopFlag* stop_;
  const std::function<void(const std::string&)>& log_;
  std::string stage_;  // the staging folder (removed at the end, with whatever is left in it)
};

}  // namespace

Status run_eval(const EvalOptions& o, EvalResult& result, const StopFlag* stop, const std::function<void(const std::string&)>& log) {
  result = EvalResult{};
  std::vector<Scenario> scenarios;
  if (Status st = load_scenarios(o.scenarios, scenarios); !st.is_ok()) return st;
  if (!o.only.empty() && std::none_of(scenarios.begin(), scenarios.end(), [&](const Scenario& s) { return s.name == o.only; }))
    return Status::invalid(fmt::format("--only '{}': no scenario of that name in '{}'", o.only, o.scenarios));
  return Evaluation(o, result, stop, log).run(scenarios);
}

}  // namespace stalldx::tasks
