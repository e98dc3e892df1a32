#include "stalldx/tasks/record.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdlib.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "live_monitor.h"
#include "python_command.h"
#include "record_ranks.h"
#include "stalldx/clock.h"
#include "stalldx/host_facts.h"
#include "stalldx/rank_facts.h"
#include "stalldx/output_claim.h"
#include "stalldx/rank_paths.h"
#include "stalldx/record/part_format.h"
#include "stalldx/text.h"
#include "stalldx/trace_io.h"

namespace stalldx::tasks {

namespace fs = std::filesystem;


int RecordResult::exit_code() const {
  if (!started) return 127;
  if (child.exited) return child.code;
  return 128 + child.signal;
}

namespace {
// $`env` when set, else the first of `relative` (to the folder of `exe`, or of this executable) that
// holds `marker`; empty when none does.
std::string find_beside(const std::string& exe, const char* env, std::initializer_list<const char*> relative, const char* marker) {
  if (const char* v = std::getenv(env); v != nullptr && *v != '\0') return v;
  std::error_code ec;
  const fs::path self = fs::canonical(exe.empty() ? fs::path("/proc/self/exe") : fs::path(exe), ec);
  if (ec) return "";
  for (const char* r : relative) {
    const fs::path p = self.parent_path() / r;
    if (fs::exists(*marker ? p / marker : p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return "";
}
}  // namespace

std::string find_inject_library(const std::string& exe) {
  return find_beside(exe, "STALLDX_INJECT_LIBRARY",
                     {"../profiler/inject/libstalldx_inject.so", "../lib/libstalldx_inject.so", "libstalldx_inject.so"}, "");
}

std::string find_python_hook(const std::string& exe) {
  return find_beside(exe, "STALLDX_PYTHON_HOOK_DIR", {"../profiler/python", "../share/stalldx/python", "stalldx_python"}, "sitecustomize.py");
}

namespace {
// The hook's environment: its folder first on PYTHONPATH (the user's entries kept after it), the library
// it records through, and the role numbers and step name it writes (one definition: roles.h, part_format.h).
void add_python_hook_env(const RecordOptions& o, ChildOptions& co) {
  if (o.python_hook_dir.empty()) return;
  const char* user = std::getenv("PYTHONPATH");
  co.env.push_back({"PYTHONPATH", user != nullptr && *user != '\0' ? o.python_hook_dir + ":" + user : o.python_hook_dir});
  co.env.push_back({"STALLDX_PY_INJECT", o.inject_library});
  std::string roles;
  for (int i = 0; i < kRoleCount; ++i) roles += fmt::format("{}{}:{}", i ? "," : "", role_name(static_cast<Role>(i)), i);
  co.env.push_back({"STALLDX_PY_ROLES", roles});
  co.env.push_back({"STALLDX_PY_STEP_NAME", record::kPythonLoopStepName});
  co.env.push_back({"STALLDX_PY_BACKWARD_STEP_NAME", record::kPythonBackwardStepName});
  co.env.push_back({"STALLDX_PY_EVAL_ITERATION_NAME", record::kPythonEvalIterationName});
  co.env.push_back({"STALLDX_PY_PREFETCH_ITERATION_NAME", record::kPythonPrefetchIterationName});
  co.env.push_back({"STALLDX_PY_WORKER_START_NAME", record::kPythonWorkerStartName});
  co.env.push_back({"STALLDX_PY_ITERATOR_START_NAME", record::kPythonIteratorStartName});
}
}  // namespace

namespace {
// Recorded processes still holding a file of the parts folder open: they outlived CMD (a daemon), and
// what they record from now on is not in the trace.
std::vector<std::int64_t> still_recording(const std::string& dir) {
  std::vector<std::int64_t> pids;
  std::error_code ec;
  const fs::path parts = fs::canonical(dir, ec);
  if (ec) return pids;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f.size() < 6 || f.compare(f.size() - 6, 6, ".names") != 0) continue;
    std::int64_t pid = 0;
    if (std::sscanf(f.c_str(), "%" SCNd64, &pid) != 1 || pid <= 0 || pid == getpid()) continue;
    for (const fs::directory_entry& fd : fs::directory_iterator(fmt::format("/proc/{}/fd", pid), ec)) {
      std::error_code lec;
      const fs::path target = fs::read_symlink(fd.path(), lec);
      if (!lec && target.parent_path() == parts) {
        pids.push_back(pid);
        break;
      }
    }
  }
  std::sort(pids.begin(), pids.end());
  return pids;
}

// What the parts folder's file system has left, when that is (almost) nothing: the likely reason for
// dropped ranges and a failed write.
std::string nearly_full(const std::string& dir) {
  struct statvfs v {};
  if (statvfs(dir.c_str(), &v) != 0) return "";
  const std::uint64_t free_bytes = static_cast<std::uint64_t>(v.f_bavail) * v.f_frsize;
  if (free_bytes >= (1u << 20)) return "";
  return fmt::format("{} KiB free on the file system of {}", free_bytes >> 10, dir);
}

}  // namespace

std::string record_trace_path(const RecordOptions& o) {
  const std::optional<LauncherRank> rank = o.name_by_rank ? launcher_rank() : std::nullopt;
  return rank ? rank_trace_path(o.trace, rank->rank) : o.trace;
}

namespace {

// A Python CMD whose processes never reported the hook: why (a flag that keeps it out), or what to check.
void note_python_hook(const RecordOptions& o, RecordResult& r) {
  if (o.python_hook_dir.empty()) return;
  const PythonCommand py = read_python_command(o.command);
  if (!py.python) return;
  const bool reported = std::any_of(r.merge.processes.begin(), r.merge.processes.end(),
                                    [](const record::RecordedProcess& p) { return !p.python_hook.empty(); });
  if (!py.blocking.empty())
    r.merge.problems.push_back(fmt::format(
        "the Python hook could not load: {} {} ignores {}, which carries it — without {} the DataLoader's waits, its workers' reads and "
        "decodes and the loop's steps are recorded with no change to the script",
        o.command[0], py.blocking, py.blocking == "-S" ? "the site module (sitecustomize)" : "PYTHONPATH", py.blocking));
  else if (!reported)
    r.merge.problems.push_back(
        "the Python hook reported from no process: the program never imported torch, or a Python it started ignores PYTHONPATH "
        "(-I, -E or -S); the trace has only what CUDA and NVTX recorded");
}

// Merges the parts (a stop raised after this point interrupts the merge), describes the recording in
// the trace and writes it. Failures are the recording's (r.recording_error), never CMD's.
void finish(const RecordOptions& o, RecordResult& r, const StopFlag* stop, std::int64_t ended, HostFacts host) {
  r.disk_full = nearly_full(r.parts_dir);
  const int stops_before = stop != nullptr ? stop->times() : 0;
  record::MergeOptions mo;
  mo.step = o.step;
  mo.end_ns = ended;
  mo.should_stop = [stop, stops_before] { return stop != nullptr && stop->times() > stops_before; };
  if (Status m = record::merge_parts(r.parts_dir, o.roles, mo, r.trace, r.merge); !m.is_ok()) {
    r.recording_error = fmt::format("nothing to merge: {} (was the parts folder removed while the command ran?)", m.message());
    return;
  }
  if (!r.merged_only) {
    host.load_1m_end = load_average_1m();
    r.trace.meta.host_facts = host;
    std::string cmd;
    for (const std::string& a : o.command) cmd += (cmd.empty() ? "" : " ") + a;
    r.trace.meta.config["command"] = to_valid_utf8(cmd, &r.merge.non_utf8_bytes);
    r.trace.meta.config["exit_code"] = std::to_string(r.exit_code());
    r.trace.meta.interrupted = r.trace.meta.interrupted || !r.child.exited || r.child.stopped;
  } else {
    r.trace.meta.config["merged_from"] = to_valid_utf8(r.parts_dir, &r.merge.non_utf8_bytes);
  }
  if (!r.merged_only) note_python_hook(o, r);
  if (!r.outlived.empty()) r.trace.meta.config["outlived_command"] = fmt::format("{}", fmt::join(r.outlived, ","));
  // Which CUDA records were asked for: a lighter recording explains missing calls and syncs.
  // State queries (cudaGetLastError, ...) are left out by default: their absence is no gap.
  r.cuda_records_complete = o.cuda && o.optional.driver && o.optional.sync;
  r.trace.meta.config["cuda_records"] =
      !o.cuda ? "none (--no-cuda)"
              : fmt::format("runtime API + device activity{}{}{}", !o.optional.driver ? " (no driver API: --no-cuda-driver)"
                            : o.optional.every_call ? " + driver API" : " + driver API work calls (launch, copy, set, wait, allocate)",
                            o.optional.sync ? " + synchronization" : " (no synchronization records: --no-cuda-sync)",
                            o.optional.every_call ? " + state queries" : " (calls that only query state left out)");
  if (const std::optional<LauncherRank> rank = o.name_by_rank ? launcher_rank() : std::nullopt) {
    r.trace.meta.config["rank"] = std::to_string(rank->rank);
    r.trace.meta.config["world_size"] = std::to_string(rank->size);
    r.trace.meta.config[rank_facts::kRunId] = rank->job.empty() ? "unknown (the launcher names no job)" : rank->job;
    r.trace.meta.config[rank_facts::kHost] = host_name();
  }
  if (Status w = write_trace_file(r.trace, r.trace_path); !w.is_ok()) {
    r.recording_error = fmt::format("writing {}: {}", r.trace_path, w.message());
    return;
  }
  if (!r.merge.merge_stopped && !(o.name_by_rank && launcher_rank())) split_ranks(o, mo, r);
  // The parts go once merged whole and written; an interrupted merge keeps them for `record --merge`.
  if (!o.keep_parts && !r.merge.merge_stopped) {  // its part files only: anything else there is not ours to remove
    if (const std::size_t others = record::remove_parts_folder(r.parts_dir); others > 0)
      r.merge.problems.push_back(fmt::format("{}: {} entr{} not of stalldx's parts: left there, with the folder", r.parts_dir, others,
                                             others == 1 ? "y" : "ies"));
  }
}
}  // namespace

Status run_record(const RecordOptions& o, RecordResult& r, const StopFlag* stop) {
  r = RecordResult{};
  if (o.command.empty()) return Status::invalid("record: no command after --");
  if (o.inject_library.empty())
    return Status::unavailable("record: libstalldx_inject.so not found next to stalldx (set STALLDX_INJECT_LIBRARY)");
  r.trace_path = record_trace_path(o);
  OutputClaim claim;  // one writer per trace, held until it is written
  if (Status c = claim.claim(r.trace_path); !c.is_ok()) return c;
  // The parts directory beside the trace (same file system, removed after the merge).
  const fs::path trace_dir = fs::absolute(fs::path(o.trace)).parent_path();
  std::string tmpl = (trace_dir / (std::string(record::kPartsFolderPrefix) + "XXXXXX")).string();
  if (mkdtemp(tmpl.data()) == nullptr)
    return Status::io(fmt::format("record: cannot create a parts directory in {}: {}", trace_dir.string(), std::strerror(errno)));
  r.parts_dir = tmpl;

  ChildOptions co;
  co.search_path = true;
  co.own_process_group = true;
  co.env = {{record::kRecordDirEnv, r.parts_dir}, {"NVTX_INJECTION64_PATH", o.inject_library}};
  if (o.cuda) {
    co.env.push_back({"CUDA_INJECTION64_PATH", o.inject_library});
    co.env.push_back({record::kRecordCudaEnv, record::cuda_records_env(o.optional)});
  }
  add_python_hook_env(o, co);
  if (o.sample.samples()) {
    co.env.push_back({record::kSampleEnv, o.sample.text()});
    if (o.cupti_detach) co.env.push_back({record::kCuptiDetachEnv, "1"});
    if (!o.step.empty()) co.env.push_back({record::kStepPatternEnv, o.step.pattern()});
    if (!o.roles_file.empty()) co.env.push_back({record::kRolesFileEnv, fs::absolute(o.roles_file).string()});
  }
  co.notice = o.notice;
  co.kill_after_s = o.kill_after_s;
  if (o.sample.on_demand && o.notice)
    co.on_start = [&o](std::int64_t pid) {
      o.notice(fmt::format("device records on demand: stalldx capture {} --steps K records the next K steps", pid));
    };
  LiveMonitor live(o, r.parts_dir);
  const HostFacts host = current_host_facts();  // CMD inherits record's affinity: the CPUs it could use
  const Status st = run_child(o.command, co, r.child, stop);
  live.stop();
  r.live_lines = live.lines();
  r.live_json_lost = live.json_lost();
  r.live_json_error = live.json_error();
  const std::int64_t ended = monotonic_ns();
  if (!st.is_ok()) {
    r.start_error = st.message();
    record::remove_parts_folder(r.parts_dir);
    r.parts_dir.clear();
    return Status::ok();
  }
  r.started = true;
  r.outlived = still_recording(r.parts_dir);
  finish(o, r, stop, ended, host);
  return Status::ok();
}

Status merge_record(const std::string& parts_dir, const RecordOptions& o, RecordResult& r, const StopFlag* stop) {
  r = RecordResult{};
  std::error_code ec;
  if (!fs::is_directory(parts_dir, ec)) return Status::invalid(fmt::format("--merge {}: not a folder", parts_dir));
  // A folder of no record's: nothing to merge, and nothing of it is ever removed.
  if (record::count_part_files(parts_dir) == 0)
    return Status::invalid(fmt::format("--merge {}: no part files of a stalldx record in it (<pid>.proc, <pid>.<tid>.ranges, ...)", parts_dir));
  r.trace_path = record_trace_path(o);
  OutputClaim claim;
  if (Status c = claim.claim(r.trace_path); !c.is_ok()) return c;
  r.started = r.merged_only = true;
  r.child.exited = true;
  r.child.code = 0;
  r.parts_dir = parts_dir;
  r.outlived = still_recording(parts_dir);
  finish(o, r, stop, monotonic_ns(), HostFacts{});  // the host CMD ran on is not known
  return Status::ok();
}

int record_exit_code(const RecordResult& r) {
  const int cmd = r.exit_code();
  return cmd == 0 && !r.recording_error.empty() ? 1 : cmd;
}

std::string record_summary_text(const RecordResult& r) {
  std::string s;
  if (!r.started) return fmt::format("stalldx record: {}\n", r.start_error);
  const auto& m = r.merge;
  if (!r.recording_error.empty() && r.merge.processes.empty() && r.merge.ranges == 0 && r.trace.ranges.empty()) {
    s += fmt::format("stalldx record: the recording failed: {}\n", r.recording_error);
    if (r.merged_only) return s;
    return s + (r.child.exited ? fmt::format("  command exited with code {}\n", r.child.code)
                               : fmt::format("  command was killed by signal {} ({})\n", r.child.signal, strsignal(r.child.signal)));
  }
  s += fmt::format("stalldx record: {} process{} seen, {} ranges\n", m.processes.size(), m.processes.size() == 1 ? "" : "es", m.ranges);
  for (const record::RecordedProcess& p : m.processes)
    s += fmt::format("  pid {} (parent {}){}: {} thread{}, {} ranges{}{} — {}\n", p.pid, p.ppid,
                     p.rank >= 0 ? fmt::format(", rank {} of {}", p.rank, p.world_size) : "", p.threads, p.threads == 1 ? "" : "s", p.ranges,
                     p.cuda_records ? ", CUDA records" : p.used_cuda ? ", CUDA used, records lost" : "",
                     p.python_hook.empty() ? "" : fmt::format(", Python hook: {}", p.python_hook), p.command);
  // A run that did not end by itself, with a DataLoader worker that never made a batch while its siblings
  // did: the loop waited on it (a stuck worker hangs its loader for good unless the loader has a timeout).
  if (r.merged_only || r.exit_code() != 0)
    for (const record::RecordedProcess& p : m.processes) {
      if (!p.loader_worker || p.batches_made > 0) continue;
      std::size_t siblings = 0, made = 0;
      for (const record::RecordedProcess& q : m.processes)
        if (q.ppid == p.ppid && q.loader_worker && q.batches_made > 0) {
          ++siblings;
          made += q.batches_made;
        }
      if (siblings == 0 || made < 2 * siblings) continue;  // its siblings well under way (not a crash at the first batch)
      s += fmt::format("  pid {}: a DataLoader worker that started but made no batch while {} sibling worker{} made {} batches — stuck from its start? "
                       "A worker forked while another thread of the program held a lock never gets it (torch.manual_seed, at a worker's "
                       "start, waits forever for torch's CPU generator when it was drawn from as the worker was forked: a thread that "
                       "iterates the DataLoader while the model is initialised); create that thread after the model, or pass "
                       "multiprocessing_context='spawn' to the DataLoader\n",
                       p.pid, siblings, siblings == 1 ? "" : "s", made);
    }
  if (m.processes.empty() && !r.merged_only)
    s += "  no process of the command made an NVTX range or a CUDA call: stalldx sees a program through those (a PyTorch one "
         "through its hook), so there is nothing to diagnose\n";
  if (m.unclosed) s += fmt::format("  {} ranges never closed (ended at the end of the recording)\n", m.unclosed);
  if (m.non_utf8_bytes) s += fmt::format("  {} bytes of names or command lines were not UTF-8 (written as U+FFFD)\n", m.non_utf8_bytes);
  if (m.unbalanced_pops) s += fmt::format("  {} NVTX pops without a push (ignored)\n", m.unbalanced_pops);
  if (m.overwritten)
    s += fmt::format("  a long run's rings: {} oldest ranges overwritten ({} a thread are kept); the trace begins at the newest wrap point "
                     "({} earlier records of other threads and the device left out)\n",
                     m.overwritten, m.ring_capacity, m.before_horizon);
  if (m.dropped) s += fmt::format("  {} ranges dropped (no space left for them, a thread's part full, or nested deeper than 256)\n", m.dropped);
  s += fmt::format("  steps: {}\n", m.steps.rule == record::StepRule::none ? "none found" : m.steps.found);
  const bool any_cuda = std::any_of(m.processes.begin(), m.processes.end(), [](const record::RecordedProcess& p) { return p.used_cuda; });
  if (m.device_windows > 0 || m.windows_without_records > 0)
    s += fmt::format("  device records sampled: {}; {} window{} in the trace{}{}\n", m.sample_plan.words(), m.device_windows,
                     m.device_windows == 1 ? "" : "s", any_cuda ? "" : " (no process used CUDA: they hold host records only)",
                     m.windows_without_records ? fmt::format(", {} more without records (the oldest beyond {} kept, or before CUDA started)",
                                                             m.windows_without_records, record::kMaxWindowFiles)
                                               : "");
  if (auto kept = r.trace.meta.config.find(record::kCuptiKeptKey); kept != r.trace.meta.config.end())
    s += fmt::format("    CUPTI kept attached between windows, its records off ({})\n", kept->second);
  for (const std::string& p : m.steps.passed_over) s += fmt::format("    passed over: {}\n", p);
  if (!m.steps.how_to_override.empty()) s += fmt::format("    to choose otherwise: {}\n", m.steps.how_to_override);
  if (m.demoted_steps && m.steps.rule != record::StepRule::named && m.steps.rule != record::StepRule::python_loop) s += fmt::format("  {} step ranges off the consumer thread or nested in another step (kept as the steps' work, or user ranges elsewhere)\n", m.demoted_steps);
  for (const std::string& p : m.problems) s += "  " + p + "\n";
  if (!r.cuda_records_complete && r.trace.meta.config.count("cuda_records"))
    s += fmt::format("  CUDA records: {}\n", r.trace.meta.config.at("cuda_records"));
  for (const std::int64_t pid : r.outlived)
    s += fmt::format("  pid {} was still running when the command ended (a daemon?): what it recorded after that is not in the trace\n", pid);
  if (!r.disk_full.empty()) s += fmt::format("  the recording ran out of space ({}): ranges past that point were dropped\n", r.disk_full);
  if (r.live_json_lost > 0)
    s += fmt::format("  --live-json: {} of {} live lines not written ({})\n", r.live_json_lost, r.live_lines, r.live_json_error);
  if (r.merged_only) s += fmt::format("  merged from {} (the command's status is not known here)\n", r.parts_dir);
  else if (r.child.exited) s += fmt::format("  command exited with code {}\n", r.child.code);
  else s += fmt::format("  command was killed by signal {} ({}){}\n", r.child.signal, strsignal(r.child.signal),
                        r.child.escalated ? ", after a second interrupt" : r.child.stopped ? ", forwarded from stalldx" : "");
  if (!r.recording_error.empty())
    s += fmt::format("  the recording failed: {}{}\n", r.recording_error,
                     r.parts_dir.empty() ? "" : fmt::format("; its parts are kept: stalldx record --merge {} --trace FILE", r.parts_dir));
  else if (r.merge.merge_stopped)
    s += fmt::format("  the rest can be merged later: stalldx record --merge {} --trace FILE\n", r.parts_dir);
  return s;
}

}  // namespace stalldx::tasks
