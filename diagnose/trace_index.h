// Internal: the indexed view of a Trace that the attribution works on (built once, read-only after).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "intervals.h"
#include "stalldx/cuda_api.h"
#include "stalldx/diagnose/diagnosis.h"

namespace stalldx::diagnose {

struct TraceIndex {
  const Trace& trace;
  const Thresholds thresholds;
  const RecordedConfig recorded;                      // the run config the trace carries, read once (recorded_config)
  bool standin = false;
  std::uint32_t consumer = 0;                         // thread lane of the step ranges
  std::vector<const HostRange*> steps;                // one per step id, ascending
  std::vector<const HostRange*> consumer_ranges;      // owners [0, n) of the segments
  std::vector<const RuntimeCall*> consumer_calls;     // owners [n, n + m)
  // Per consumer range: its run-queue delay outside the sampled consumer ranges nested in it, ns (-1 =
  // not sampled). Idle inside the range but outside its children may be the consumer waiting for a CPU.
  std::vector<std::int64_t> consumer_own_runq_ns;
  std::vector<Segment> segments;                      // innermost timeline of the consumer
  std::vector<std::int64_t> activity_step;            // resolved step per activity (-1 = unmatched)
  std::vector<Interval> busy;                         // union of device work over all streams
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> activities_by_corr;
  std::unordered_map<std::uint64_t, const RuntimeCall*> call_by_corr;   // consumer's calls
  // Device work with a launching call, by begin time: (begin_ns, correlation). For the host-paced rule.
  std::vector<std::pair<std::int64_t, std::uint64_t>> work_begins;
  std::unordered_map<std::int64_t, std::vector<const HostRange*>> producer_by_batch;  // retrieval/decode off the consumer
  // Retrieval/decode ranges that name no batch (a recorded program's workers), by begin time; a wait is
  // split by those overlapping it. unbatched_longest_ns bounds the search back from a wait's begin.
  std::vector<const HostRange*> unbatched_producers;
  std::int64_t unbatched_longest_ns = 0;
  int warmup = 0;
  int decode_threads = 0;  // most threads off the consumer decoding at once (first to last decode range of each)
  // The cores those threads asked for: their producer ranges' (read, decode, collate) CPU + run-queue time
  // (the wall time where CPU was not sampled) over the time any of them was between its first and last
  // decode; -1 = none. Work outside ranges (a worker process sending its batch) is not counted. A
  // worker that idles between batches (a loader far ahead of its loop) asks for little of its core.
  double decode_cores = -1;
  int cores = -1;          // the host's usable CPUs (all online ones where affinity was not recorded); -1 = unknown
  double loop_cpu = -1;     // the consumer's CPU time over its steps' wall time (0..1); -1 = not sampled
  // The share of the time the consumer could run that it spent runnable but not running (its steps'
  // run-queue delay over CPU + run-queue, 0..1); -1 = not sampled. A loop denied a CPU is a host whose
  // cores are all taken: more workers would take theirs from the loop.
  double loop_denied = -1;
  bool loop_starved() const { return loop_denied >= thresholds.starved_runq_ratio; }
  // The loop's waits were split as decoding while the loop itself was blocked (its CPU under the contention
  // ratio) and no thread off the loop left decode ranges: the batches' makers are threads or processes
  // the trace cannot see (a multiprocessing Pool or Process, a thread pool without ranges), so how many
  // there are, and whether they already fill the host, is not known.
  bool decoders_unseen = false;
  // The same with the loop on a CPU through those decode ranges: it made its batches itself, on its own
  // thread (a DataLoader with num_workers=0, or no DataLoader), so none of that work overlaps its steps.
  bool loop_decodes = false;
  // What more producers can and cannot do when decoders_unseen: what the trace knows of the host (its usable
  // cores, the loop's own CPU use) and what it does not (the makers' number and CPU use).
  std::string unseen_decoders_why() const;
  // What helps when loop_decodes.
  static constexpr const char* kLoopDecodesWhy =
      "the loop made its batches itself, on its own thread (a DataLoader with num_workers=0, or none), so that work never overlaps "
      "its steps: make them in worker processes or threads (DataLoader num_workers > 0) while the step runs, or make each sample cheaper";
  // Decoding threads' demand plus the loop's own CPU use (a whole core when not sampled) leave under half
  // a core of the host free: more workers could not run.
  bool decoders_fill_cores() const {
    return cores > 0 && decode_threads > 0 && decode_cores + (loop_cpu >= 0 ? loop_cpu : 1.0) > cores - 0.5;
  }
  struct Launches { int count = 0; std::int64_t host_ns = 0, first_ns = INT64_MAX, last_ns = 0; };
  std::unordered_map<std::int64_t, Launches> launches_by_step;   // consumer's kernel launch calls (by call.step)
  std::vector<ApiKind> api_kind_by_name;  // by name id: api_kind of every name, read once

  explicit TraceIndex(const Trace& t, const Thresholds& th);
  // A device gap is host-paced (HTA's rule) when the work that ends it was launched by the consumer after
  // the gap began: the device went idle before the host had asked for more.
  bool host_paced(Interval gap) const;
  // The correlations of the device work that ends `gap`, launched by the consumer after the gap began.
  std::vector<std::uint64_t> paced_work(Interval gap) const;
  // The steps were inferred from batch-sized host-to-device copies (record::kStepsBatchCopyBytesKey; 0 =
  // not), and `gap` ends with such a copy that the consumer issued after the gap began.
  std::uint64_t batch_copy_bytes = 0;
  bool before_batch_copy(Interval gap) const;
  ApiKind kind(const RuntimeCall& c) const { return c.name < api_kind_by_name.size() ? api_kind_by_name[c.name] : ApiKind::other; }
};

inline double ms(std::int64_t ns) { return static_cast<double>(ns) / 1e6; }

}  // namespace stalldx::diagnose
