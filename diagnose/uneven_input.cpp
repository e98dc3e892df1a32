#include "uneven_input.h"

#include <algorithm>
#include <unordered_map>

namespace stalldx::diagnose {

namespace {
// First begin to last end of the producer ranges of `batch`; -1 when none name it (a recorded program's
// workers name no batch).
double make_ms(const TraceIndex& ix, std::int64_t batch) {
  auto it = ix.producer_by_batch.find(batch);
  if (it == ix.producer_by_batch.end() || it->second.empty()) return -1;
  std::int64_t b = INT64_MAX, e = INT64_MIN;
  for (const HostRange* p : it->second) {
    b = std::min(b, p->begin_ns);
    e = std::max(e, p->end_ns);
  }
  return ms(e - b);
}

}  // namespace

bool input_cause(Cause c) {
  const StallClass k = cause_class(c);
  return k == StallClass::retrieval || k == StallClass::decoding || unsplit_input(c);
}

UnevenInput find_uneven_input(const TraceIndex& ix, const Report& rep, int skip) {
  UnevenInput u;
  double input_ms = 0, window_ms = 0, waited_make = 0, ready_make = 0;
  int waited_known = 0, ready_known = 0;
  std::unordered_map<std::int64_t, std::int64_t> batch_of_step;  // the batch each step's first wait was for
  for (const HostRange* r : ix.consumer_ranges)
    if (r->role == Role::wait_batch) batch_of_step.emplace(r->step, r->batch);
  for (const StepDiagnosis& s : rep.steps) {
    if (s.warmup) continue;
    if (skip > 0) {  // start-up
      --skip;
      continue;
    }
    window_ms += s.window_ms;
    double step_input = 0;
    for (const CauseShare& c : s.causes)
      if (input_cause(c.cause)) step_input += c.ms;
    input_ms += step_input;
    const auto batch = batch_of_step.find(s.step);
    const double made = batch == batch_of_step.end() ? -1 : make_ms(ix, batch->second);
    if (s.verdict == Verdict::retrieval || s.verdict == Verdict::decoding || s.verdict == Verdict::input) {
      ++u.waited;
      u.wait_ms += step_input;
      if (made >= 0) waited_make += made, ++waited_known;
    } else {
      ++u.ready;
      u.ready_window_ms += s.window_ms;
      if (made >= 0) ready_make += made, ++ready_known;
    }
  }
  if (waited_known > 0) u.waited_make_ms = waited_make / waited_known;
  if (ready_known > 0) u.ready_make_ms = ready_make / ready_known;
  // Two or more waits, most steps ready, and the waits at least half of the steady time.
  u.found = u.waited >= 2 && u.ready > u.waited && window_ms > 0 && input_ms >= 0.5 * window_ms;
  return u;
}

}  // namespace stalldx::diagnose
