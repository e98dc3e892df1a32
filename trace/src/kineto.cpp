// Kineto JSON on simdjson's DOM parser (Debian's libsimdjson: a 100k-event trace parses in tens of ms,
// where a general JSON DOM takes a second).
#include "stalldx/record/kineto.h"

#include "kineto_events.h"
#include "kineto_job.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

#include "json_runs.h"
#include "stalldx/cuda_api.h"
#include "stalldx/record/merge.h"
#include "stalldx/trace_io.h"

namespace stalldx::record {

namespace {

bool is_copy_call(std::string_view n) { return api_kind(n) == ApiKind::copy; }
bool is_sync_call(std::string_view n) {
  const ApiKind k = api_kind(n);
  return k == ApiKind::synchronize || k == ApiKind::copy;  // a D2H copy waits for the device
}


}  // namespace

bool looks_like_kineto(const std::string& text) {
  const std::string_view head(text.data(), std::min<std::size_t>(text.size(), 8192));
  if (const std::size_t first = head.find_first_not_of(" \t\r\n"); first != std::string_view::npos && head[first] == '[') return true;
  return head.find("\"schemaVersion\"") != std::string_view::npos || head.find("\"deviceProperties\"") != std::string_view::npos ||
         head.find("\"baseTimeNanoseconds\"") != std::string_view::npos || head.find("\"distributedInfo\"") != std::string_view::npos;
}

namespace {

// Kineto's writer puts `"traceEvents": [` on a line of its own, then each event as a block from `  {` to
// `  }` (events separated by `,` + newline; its strings escape their newlines) and closes with `  ]`: that
// layout is read in runs of events (json_runs.h). The range of the events, or nothing when the text is
// not in that layout.
std::optional<std::string_view> kineto_layout_events(const std::string& text) {
  constexpr std::string_view open_text = "\"traceEvents\": [\n", close_text = "\n  ]";
  const std::string_view all(text);
  const std::size_t open = all.find(open_text);
  const std::size_t close = open == std::string_view::npos ? open : all.rfind(close_text);
  if (open == std::string_view::npos || close == std::string_view::npos || close < open + open_text.size()) return std::nullopt;
  return all.substr(open + open_text.size(), close - open - open_text.size());
}

// A copy / sync op keeps its role only where it issued the CUDA call that earns it.
void keep_earned_ops(const KinetoEvents& ev, Trace& out, KinetoReport& rep) {
  // A copy / sync op earns its role by a CUDA call inside it on its thread; otherwise its time stays
  // with its parent (a Dataset's aten::copy_ on CPU tensors is not a transfer).
  std::unordered_map<std::uint32_t, std::vector<const RuntimeCall*>> calls_on;
  for (const RuntimeCall& c : out.calls) calls_on[c.thread].push_back(&c);
  for (auto& [th, v] : calls_on) std::sort(v.begin(), v.end(), [](const RuntimeCall* a, const RuntimeCall* b) { return a->begin_ns < b->begin_ns; });
  const auto issued = [&](const HostRange& r, bool (*pred)(std::string_view)) {
    auto it = calls_on.find(r.thread);
    if (it == calls_on.end()) return false;
    auto c = std::lower_bound(it->second.begin(), it->second.end(), r.begin_ns,
                              [](const RuntimeCall* x, std::int64_t v) { return x->begin_ns < v; });
    for (; c != it->second.end() && (*c)->begin_ns < r.end_ns; ++c)
      if (pred(out.name((*c)->name))) return true;
    return false;
  };
  for (const KinetoEvents::PendingRange& p : ev.ranges) {
    if (p.is_op && p.range.role == Role::submit && !issued(p.range, &is_copy_call)) { rep.folded_ops++; continue; }
    if (p.is_op && p.range.role == Role::sync && !issued(p.range, &is_sync_call)) { rep.folded_ops++; continue; }
    out.ranges.push_back(p.range);
  }
}

void keep_loader_ops(const KinetoEvents& ev, Trace& out, KinetoReport& rep) {
  // num_workers=0: the loader runs inside the wait on the loop's own thread; its CPU ops there are the
  // loader's decode/transform work (what is left of the wait — Python file reads, collation — stays
  // unsplit). Elsewhere CPU ops with no role fold into their parents.
  {
    std::unordered_map<std::uint32_t, std::vector<const HostRange*>> waits;
    for (const HostRange& r : out.ranges)
      if (r.role == Role::wait_batch) waits[r.thread].push_back(&r);
    for (auto& [th, v] : waits) std::sort(v.begin(), v.end(), [](const HostRange* a, const HostRange* b) { return a->begin_ns < b->begin_ns; });
    std::vector<HostRange> loader_ops;
    for (const HostRange& op : ev.folded) {
      auto it = waits.find(op.thread);
      bool inside = false;
      if (it != waits.end()) {
        auto w = std::upper_bound(it->second.begin(), it->second.end(), op.begin_ns,
                                  [](std::int64_t v, const HostRange* r) { return v < r->begin_ns; });
        inside = w != it->second.begin() && op.end_ns <= (*std::prev(w))->end_ns;
      }
      if (inside) loader_ops.push_back(op);
      else rep.folded_ops++;
    }
    rep.loader_ops = loader_ops.size();
    out.ranges.insert(out.ranges.end(), loader_ops.begin(), loader_ops.end());
  }
}

void name_lanes(const KinetoEvents& ev, Trace& out) {
  for (ThreadInfo& th : out.threads) {
    auto pn = ev.process_names.find(th.pid);
    if (pn != ev.process_names.end()) th.process = pn->second;
    auto tn = ev.thread_names.find({th.pid, th.os_tid});
    th.name = tn != ev.thread_names.end() ? tn->second : fmt::format("thread {}", th.os_tid);
  }

}

struct StepFacts {
  int step_ranges = 0;
  std::int64_t first_step_thread = -1;
};

// After the steps are assigned: a step-long `submit` range under the annotated ones in each step that
// launched device work.
StepFacts add_step_host_work(Trace& out) {
  // Steps, then the host work of each step that no annotation covers: in a PyTorch loop the main thread
  // is waiting for data, synchronizing, or issuing the step's device work — a step-long `submit` range
  // under the mapped ones (innermost wins) says the last.
  std::map<std::int64_t, std::int64_t> launches_in_step;
  for (const RuntimeCall& c : out.calls)
    if (c.step >= 0) launches_in_step[c.step]++;
  std::vector<HostRange> host_work;
  int step_ranges = 0;
  std::int64_t first_step_thread = -1;
  for (const HostRange& r : out.ranges)
    if (r.role == Role::step && r.step >= 0) {
      ++step_ranges;
      first_step_thread = r.thread;
      if (launches_in_step[r.step] > 0) {
        HostRange w = r;  // strictly inside the step, so that it is the innermost range where nothing else is
        w.begin_ns += 1;
        w.end_ns = std::max(w.begin_ns, w.end_ns - 1);
        w.role = Role::submit;
        w.name = out.intern("host work between annotated phases (op dispatch, Python)");
        host_work.push_back(w);
      }
    }
  out.ranges.insert(out.ranges.end(), host_work.begin(), host_work.end());

  return {step_ranges, first_step_thread};
}

void set_meta(const KinetoEvents& ev, const std::string& text, std::optional<std::string_view> laid_out, const KinetoReport& rep, Trace& out) {
  out.meta.host = true;
  out.meta.cupti = rep.device > 0 || rep.calls > 0;
  out.meta.device = out.meta.cupti ? "CUDA (torch.profiler trace)" : "none recorded (torch.profiler trace, CPU events only)";
  out.meta.config["source"] = "torch.profiler";
  read_kineto_job(text, laid_out, out.meta);
  out.meta.skipped_events = rep.not_understood;
  std::int64_t origin = std::isfinite(ev.first_ts) ? kineto_ns(ev.first_ts) : INT64_MAX;
  for (const HostRange& r : out.ranges) origin = std::min(origin, r.begin_ns);
  for (const DeviceActivity& a : out.activities) origin = std::min(origin, a.begin_ns);
  out.meta.origin_ns = origin == INT64_MAX ? 0 : origin;

}

// What the reader could not see, said: no steps, no GPU events, other processes' steps, the loader's workers.
void add_notes(const Trace& out, const StepFacts& steps, std::uint64_t demoted, KinetoReport& rep) {
  if (rep.array_form)
    rep.notes.push_back("a bare array of events with no categories (torch's legacy autograd profiler, or a torch built without "
                        "Kineto): every host event read as a CPU op; no GPU activity or CUDA calls are told apart");
  if (steps.step_ranges == 0)
    rep.notes.push_back("no ProfilerStep#N ranges: profile with a schedule and call prof.step() every iteration, so each step is a range");
  if (rep.device == 0)
    rep.notes.push_back("no GPU events (a CPU-only profile, or CUDA activity off): profile with ProfilerActivity.CUDA to judge stalls against the device");
  std::map<std::int64_t, int> step_pids;
  for (const HostRange& r : out.ranges)
    if (r.role == Role::user && r.step < 0 && out.name(r.name).rfind("ProfilerStep#", 0) == 0) step_pids[out.threads[r.thread].pid]++;
  if (demoted > 0 && steps.first_step_thread >= 0)
    rep.notes.push_back(fmt::format("steps of {} other thread(s)/process(es) set aside ({} step ranges): one trace per rank — diagnosing pid {} only",
                                    step_pids.size() + (step_pids.empty() ? 1 : 0), demoted,
                                    out.threads[static_cast<std::size_t>(steps.first_step_thread)].pid));
  bool single_process = false, multi_process = false;
  for (const HostRange& r : out.ranges) {
    const std::string& n = out.name(r.name);
    single_process = single_process || (r.role == Role::wait_batch && n.find("SingleProcess") != std::string::npos);
    multi_process = multi_process || (r.role == Role::wait_batch && n.find("MultiProcessing") != std::string::npos);
  }
  if (multi_process)
    rep.notes.push_back("DataLoader workers are other processes, absent from torch.profiler traces: a wait on the loader is input-bound, "
                        "split unknown (annotate __getitem__ and run under `stalldx record`, or profile with num_workers=0)");
  if (single_process && rep.loader_ops > 0)
    rep.notes.push_back(fmt::format("num_workers=0: the loader's {} CPU ops inside the waits count as decode work; the rest of each wait "
                                    "(Python file reads, collation) stays unsplit — record_function(\"read_file\") in __getitem__ splits it",
                                    rep.loader_ops));
}

// in_runs: read Kineto's own layout in runs when the text has it; anything that does not parse that way
// is read again as one document, whose parser names the problem.
Status read_kineto(const std::string& text, const RoleMap& roles, Trace& out, KinetoReport& rep, bool in_runs) {
  out = Trace{};
  rep = KinetoReport{};
  simdjson::dom::parser parser;
  simdjson::dom::array events;
  const std::optional<std::string_view> laid_out = in_runs ? kineto_layout_events(text) : std::nullopt;
  if (!laid_out) {
    simdjson::dom::element doc;
    // parse() reads in place when the string's capacity holds simdjson's padding (read_text_file's does).
    if (auto err = parser.parse(text).get(doc); err)
      return Status::parse(fmt::format("not a complete JSON document ({}): a trace cut short, or not a trace", simdjson::error_message(err)));
    if (doc.get_array().get(events) == simdjson::SUCCESS) rep.array_form = true;
    else if (doc["traceEvents"].get_array().get(events))
      return Status::parse("a Kineto trace without a 'traceEvents' array");
  }

  KinetoEvents events_in(roles, out, rep);
  events_in.untyped_host_ops = rep.array_form;
  const auto on_event = [&events_in](const simdjson::dom::element& ev) { events_in.on_event(ev); };
  if (laid_out) {
    JsonRuns runs;
    if (!runs.for_each(*laid_out, "\n  },\n", 4, on_event)) return read_kineto(text, roles, out, rep, false);
    rep.runs = runs.runs();
  } else {
    for (simdjson::dom::element ev : events) on_event(ev);
  }

  keep_earned_ops(events_in, out, rep);
  keep_loader_ops(events_in, out, rep);
  rep.host_ranges = out.ranges.size();
  name_lanes(events_in, out);
  infer_steps(out);
  const std::uint64_t demoted = assign_steps(out);
  const StepFacts steps = add_step_host_work(out);
  set_meta(events_in, text, laid_out, rep, out);
  add_notes(out, steps, demoted, rep);
  return Status::ok();
}

}  // namespace

Status read_kineto_json(const std::string& text, const RoleMap& roles, Trace& out, KinetoReport& rep) {
  return read_kineto(text, roles, out, rep, true);
}

Status read_any_trace(const std::string& path, const RoleMap& roles, Trace& out, KinetoReport& report, bool& was_kineto) {
  std::string text;
  if (Status st = read_text_file(path, text); !st.is_ok()) return st;
  was_kineto = looks_like_kineto(text);
  if (was_kineto) return read_kineto_json(text, roles, out, report).prefixed(path);
  return read_trace_json(text, out).prefixed(path);
}

}  // namespace stalldx::record
