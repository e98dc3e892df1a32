#include "stalldx/tasks/record.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "stalldx/record/part_format.h"
#include "stalldx/text.h"
#include "stalldx/trace_io.h"

namespace stalldx::tasks {

namespace fs = std::filesystem;

namespace {
std::int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

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
}
}  // namespace

Status run_record(const RecordOptions& o, RecordResult& r, const StopFlag* stop) {
  r = RecordResult{};
  if (o.command.empty()) return Status::invalid("record: no command after --");
  if (o.inject_library.empty())
    return Status::unavailable("record: libstalldx_inject.so not found next to stalldx (set STALLDX_INJECT_LIBRARY)");
  // The parts directory beside the trace (same file system, removed after the merge).
  const fs::path trace_dir = fs::absolute(fs::path(o.trace)).parent_path();
  std::string tmpl = (trace_dir / ".stalldx-record-XXXXXX").string();
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
  const Status st = run_child(o.command, co, r.child, stop);
  const std::int64_t ended = monotonic_ns();
  if (!st.is_ok()) {
    r.start_error = st.message();
    std::error_code ec;
    fs::remove_all(r.parts_dir, ec);
    r.parts_dir.clear();
    return Status::ok();
  }
  r.started = true;
  record::MergeOptions mo;
  mo.step = o.step;
  mo.end_ns = ended;
  if (Status m = record::merge_parts(r.parts_dir, o.roles, mo, r.trace, r.merge); !m.is_ok()) return m;
  r.trace.meta.interrupted = !r.child.exited || r.child.stopped;
  std::string cmd;
  for (const std::string& a : o.command) cmd += (cmd.empty() ? "" : " ") + a;
  r.trace.meta.config["command"] = to_valid_utf8(cmd, &r.merge.non_utf8_bytes);
  r.trace.meta.config["exit_code"] = std::to_string(r.exit_code());
  // Which CUDA records were asked for: a lighter recording explains missing calls and syncs.
  // State queries (cudaGetLastError, ...) are left out by default: their absence is no gap.
  r.cuda_records_complete = o.cuda && o.optional.driver && o.optional.sync;
  r.trace.meta.config["cuda_records"] =
      !o.cuda ? "none (--no-cuda)"
              : fmt::format("runtime API + device activity{}{}{}", !o.optional.driver ? " (no driver API: --no-cuda-driver)"
                            : o.optional.every_call ? " + driver API" : " + driver API work calls (launch, copy, set, wait, allocate)",
                            o.optional.sync ? " + synchronization" : " (no synchronization records: --no-cuda-sync)",
                            o.optional.every_call ? " + state queries" : " (calls that only query state left out)");
  const Status w = write_trace_file(r.trace, o.trace);
  if (!o.keep_parts) {
    std::error_code ec;
    fs::remove_all(r.parts_dir, ec);
  }
  return w.prefixed(fmt::format("record: writing {}", o.trace));
}

std::string record_summary_text(const RecordResult& r) {
  std::string s;
  if (!r.started) return fmt::format("stalldx record: {}\n", r.start_error);
  const auto& m = r.merge;
  s += fmt::format("stalldx record: {} process{} seen, {} ranges\n", m.processes.size(), m.processes.size() == 1 ? "" : "es", m.ranges);
  for (const record::RecordedProcess& p : m.processes)
    s += fmt::format("  pid {} (parent {}): {} thread{}, {} ranges{}{} — {}\n", p.pid, p.ppid, p.threads, p.threads == 1 ? "" : "s", p.ranges,
                     p.cuda_records ? ", CUDA records" : p.used_cuda ? ", CUDA used, records lost" : "",
                     p.python_hook.empty() ? "" : fmt::format(", Python hook: {}", p.python_hook), p.command);
  if (m.unclosed) s += fmt::format("  {} ranges never closed (ended at the end of the recording)\n", m.unclosed);
  if (m.non_utf8_bytes) s += fmt::format("  {} bytes of names or command lines were not UTF-8 (written as U+FFFD)\n", m.non_utf8_bytes);
  if (m.unbalanced_pops) s += fmt::format("  {} NVTX pops without a push (ignored)\n", m.unbalanced_pops);
  if (m.dropped) s += fmt::format("  {} ranges dropped (a thread's part full, or nested deeper than 256)\n", m.dropped);
  s += fmt::format("  steps: {}\n", m.steps.rule == record::StepRule::none ? "none found" : m.steps.found);
  for (const std::string& p : m.steps.passed_over) s += fmt::format("    passed over: {}\n", p);
  if (!m.steps.how_to_override.empty()) s += fmt::format("    to choose otherwise: {}\n", m.steps.how_to_override);
  if (m.demoted_steps) s += fmt::format("  {} step ranges off the consumer thread or nested in another step (kept as user ranges)\n", m.demoted_steps);
  for (const std::string& p : m.problems) s += "  " + p + "\n";
  if (!r.cuda_records_complete) s += fmt::format("  CUDA records: {}\n", r.trace.meta.config.at("cuda_records"));
  if (r.child.exited) s += fmt::format("  command exited with code {}\n", r.child.code);
  else s += fmt::format("  command was killed by signal {} ({}){}\n", r.child.signal, strsignal(r.child.signal),
                        r.child.stopped ? ", forwarded from stalldx" : "");
  return s;
}

}  // namespace stalldx::tasks
