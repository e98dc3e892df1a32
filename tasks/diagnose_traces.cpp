#include "stalldx/tasks/diagnose_traces.h"

#include <fmt/format.h>

#include <filesystem>

#include "stalldx/diagnose/evaluation.h"
#include "stalldx/diagnose/whatif.h"
#include "stalldx/output_file.h"
#include "stalldx/rank_paths.h"
#include "stalldx/record/kineto.h"
#include "stalldx/trace_io.h"

namespace stalldx::tasks {

namespace {
void say(const DiagnoseOptions& o, const std::string& line) {
  if (o.notice) o.notice(line);
}

// Where the trimmed copy of `input` goes: DIR/<its file name>, never the input itself.
Status trimmed_path(const std::string& dir, const std::string& input, std::string& out) {
  namespace fs = std::filesystem;
  std::string name = fs::path(input).filename().string();
  if (name.ends_with(".gz")) name.resize(name.size() - 3);  // written uncompressed
  out = (fs::path(dir) / name).string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::invalid(fmt::format("--trimmed {}: not a folder", dir));
  if (Status st = check_distinct_files({{"the trace read", input, false}, {"--trimmed", out}}); !st.is_ok()) return st;
  OutputCheck check{"trimmed trace"};
  return check_output_path(out, check);
}

// Reads one trace (stalldx's or torch.profiler's), saying what a torch.profiler trace gave, and writes
// its trimmed copy when asked.
Status read_one(const DiagnoseOptions& o, const std::string& path, Trace& t) {
  say(o, fmt::format("reading {}", path));
  record::KinetoReport kineto;
  bool was_kineto = false;
  if (Status st = record::read_any_trace(path, record::RoleMap::defaults(), t, kineto, was_kineto); !st.is_ok()) return st;
  if (was_kineto) {
    say(o, fmt::format("torch.profiler trace: {} events → {} host ranges, {} CUDA calls, {} device records; {} CPU ops folded into "
                       "their parents; {} events not understood",
                       kineto.events, kineto.host_ranges, kineto.calls, kineto.device, kineto.folded_ops, kineto.not_understood));
    for (const std::string& n : kineto.notes) say(o, "note: " + n);
  }
  if (o.trimmed_dir.empty()) return Status::ok();
  std::string out;
  if (Status st = trimmed_path(o.trimmed_dir, path, out); !st.is_ok()) return st;
  if (Status st = write_trace_file(diagnose::trim_steps(t, o.keep_steps), out); !st.is_ok()) return st;
  say(o, fmt::format("wrote {} ({} steady steps of {})", out, o.keep_steps, path));
  return Status::ok();
}

// Several traces: the ranks of one job, read one at a time and reduced (memory: the largest rank).
Status diagnose_ranks(const DiagnoseOptions& o, DiagnoseResult& r) {
  diagnose::CrossRankAccumulator acc;
  for (const std::string& f : o.traces) {
    Trace t;
    if (Status st = read_one(o, f, t); !st.is_ok()) return st;
    diagnose::RankSteps rank;
    if (Status st = diagnose::rank_steps(t, f, o.thresholds, rank); !st.is_ok()) return st;
    r.ranks_standin = r.ranks_standin || rank.standin;
    r.rank_lines.push_back(diagnose::rank_steps_line(rank));
    if (Status st = acc.add(rank); !st.is_ok()) return st;
  }
  r.ranks = acc.finish();
  return Status::ok();
}
}  // namespace

Status prepare_diagnose(DiagnoseOptions& o) {
  if (Status st = expand_trace_folders(o.traces); !st.is_ok()) return st;
  if (o.traces.size() > 1 && !o.what_if.empty())
    return Status::invalid("--what-if reads one trace; across ranks: the text, --json, --svg and --html");
  if (!o.trimmed_dir.empty())
    for (const std::string& f : o.traces) {
      std::string out;
      if (Status st = trimmed_path(o.trimmed_dir, f, out); !st.is_ok()) return st;
    }
  return Status::ok();
}

Status diagnose_traces(const DiagnoseOptions& o, DiagnoseResult& r) {
  r = DiagnoseResult{};
  if (o.traces.empty()) return Status::invalid("no trace to diagnose");
  r.source = o.traces.front();
  if (o.traces.size() > 1) return diagnose_ranks(o, r);
  Trace t;
  if (Status st = read_one(o, r.source, t); !st.is_ok()) return st;
  r.report = diagnose::diagnose(t, o.thresholds);
  if (!o.what_if.empty()) {
    const diagnose::StageCosts costs = diagnose::measure_stage_costs(t, r.report, o.thresholds);  // the user's --warmup too
    r.what_if_table = diagnose::whatif_table(costs, diagnose::predict_curve(costs, o.what_if));
  }
  return Status::ok();
}

}  // namespace stalldx::tasks
