// Evaluation passes inside training steps (evaluation_passes.h).
#include "evaluation_passes.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "stalldx/record/part_format.h"

namespace stalldx::diagnose {

namespace {
constexpr double kNsPerMs = 1e6;
std::int64_t iterator_of(std::int64_t batch) { return batch >> record::kBatchIteratorShift; }
}  // namespace

EvaluationPasses find_evaluation_passes(const Trace& t, const TraceIndex& ix, const Report& rep, int skip) {
  EvaluationPasses out;
  const auto eval_name = t.names.find(record::kPythonEvalIterationName);
  if (!eval_name) return out;
  std::set<std::int64_t> looked_at;
  std::vector<const StepDiagnosis*> windows;  // the looked-at steps, in time order
  for (const StepDiagnosis& s : rep.steps) {
    if (s.warmup || skip-- > 0) continue;
    looked_at.insert(s.step);
    windows.push_back(&s);
    ++out.looked_at;
    out.window_ms += s.window_ms;
  }
  // Per step: the evaluation iterations' span and their loaders (iterator fields of their batch ids).
  struct Span {
    std::int64_t begin = INT64_MAX, end = INT64_MIN;
    std::set<std::int64_t> loaders;
  };
  std::map<std::int64_t, Span> spans;
  for (const HostRange* r : ix.consumer_ranges) {
    if (r->role != Role::user || r->name != *eval_name || r->step < 0 || looked_at.count(r->step) == 0) continue;
    Span& sp = spans[r->step];
    sp.begin = std::min(sp.begin, r->begin_ns);
    sp.end = std::max(sp.end, r->end_ns);
    if (r->batch >= 0) sp.loaders.insert(iterator_of(r->batch));
    ++out.iterations;
  }
  if (spans.empty()) return out;
  // The loaders' own waits and worker starts in those steps (a start comes just before the first iteration).
  const auto start_name = t.names.find(record::kPythonIteratorStartName);
  for (const HostRange* r : ix.consumer_ranges) {
    auto it = spans.find(r->step);
    if (it == spans.end() || r->batch < 0 || it->second.loaders.count(iterator_of(r->batch)) == 0) continue;
    if (r->role == Role::wait_batch) {
      out.wait_ms += (r->end_ns - r->begin_ns) / kNsPerMs;
    } else if (start_name && r->name == *start_name) {
      out.worker_start_ms += (r->end_ns - r->begin_ns) / kNsPerMs;
      ++out.worker_starts;
      it->second.begin = std::min(it->second.begin, r->begin_ns);
    }
  }
  // Each pass's steps: those whose windows overlap it (windows are relative to the trace origin, in ms).
  const auto at = [&](double window_ms) { return t.meta.origin_ns + static_cast<std::int64_t>(window_ms * kNsPerMs); };
  for (const auto& [step, sp] : spans) {
    out.ms += (sp.end - sp.begin) / kNsPerMs;
    auto w = std::lower_bound(windows.begin(), windows.end(), sp.begin,
                              [&](const StepDiagnosis* s, std::int64_t ns) { return at(s->window_end_ms) <= ns; });
    bool any = false;
    for (; w != windows.end() && at((*w)->window_begin_ms) < sp.end; ++w) {
      out.steps.insert((*w)->step);
      any = true;
    }
    if (!any) out.steps.insert(step);
  }
  return out;
}

}  // namespace stalldx::diagnose
