// torch.profiler (Kineto) traces into the trace model, so `stalldx diagnose x.pt.trace.json[.gz]` gives
// PyTorch users per-step verdicts. Both schemas: the current one (categories cpu_op, user_annotation,
// cuda_runtime, cuda_driver, kernel, gpu_memcpy, gpu_memset; baseTimeNanoseconds) and the older one
// (Operator, Runtime, Kernel, Memcpy, Memset). Host ranges take roles from the RoleMap; a copy or a sync
// op counts as one only when it issued the CUDA call that makes it one (aten::copy_ on CPU tensors inside
// a Dataset is not a transfer); steps are ProfilerStep#N.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stalldx/record/role_map.h"
#include "stalldx/status.h"
#include "stalldx/trace_model.h"

namespace stalldx::record {

struct KinetoReport {
  std::uint64_t events = 0;            // entries in traceEvents
  std::uint64_t host_ranges = 0, calls = 0, device = 0;
  std::uint64_t folded_ops = 0;        // CPU ops with no role (their time stays with their parents)
  std::uint64_t loader_ops = 0;        // CPU ops inside a wait on the loop's own thread (num_workers=0): decode work
  std::uint64_t ignored = 0;           // events known and not needed (flows, metadata, python frames, overhead)
  std::uint64_t not_understood = 0;    // categories/phases this reader does not know (counted in the coverage)
  std::vector<std::string> notes;      // one line each: what is missing and what follows from it
  std::uint64_t runs = 0;              // runs of events parsed apart (Kineto's own layout); 0 = read as one document
  // The document was a bare JSON array of events (the Chrome trace format's array form: torch's legacy
  // autograd profiler, a torch built without Kineto): its events carry no category, and each complete
  // event on the host is read as a CPU op (named ranges keep their roles; the rest fold into them).
  bool array_form = false;
};

// True when `text` starts like a Kineto trace (its header keys come before traceEvents), or is a bare JSON
// array of events (stalldx's own traces are objects).
bool looks_like_kineto(const std::string& text);

// Parses a Kineto JSON document: in Kineto's own layout, ~1 MB runs of events at a time (memory: the text
// plus a few MB); otherwise as one document. Errors name what was wrong (not JSON, no traceEvents, ...).
Status read_kineto_json(const std::string& text, const RoleMap& roles, Trace& out, KinetoReport& report);

// Any trace stalldx can diagnose: its own, a Kineto trace (gzip or not). `report` is filled for Kineto.
Status read_any_trace(const std::string& path, const RoleMap& roles, Trace& out, KinetoReport& report, bool& was_kineto);

}  // namespace stalldx::record
