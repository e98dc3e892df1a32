// The question each step's verdict leaves (next_question.h).
#include "next_question.h"

#include <fmt/format.h>

namespace stalldx::diagnose {

std::string next_question(const StepDiagnosis& sd, const TraceIndex& ix, const Thresholds& th, const Coverage& cov, const InputSplit* split,
                          std::string_view top_cause) {
  switch (sd.verdict) {
    case Verdict::device_bound:
      return "the device had work queued: a faster input pipeline buys nothing here; the step itself is the limit";
    case Verdict::retrieval:
      return split != nullptr && split->read_cpu_ratio >= 0 && split->read_cpu_ratio < th.waiting_cpu_ratio
                             ? "reads ran mostly off-CPU (waiting on storage): measure the storage's latency/bandwidth; more concurrent reads hide latency, not a bandwidth cap"
                             : "is storage the limit? compare read time per file with the step time";
    case Verdict::decoding:
      if (!cov.cpu_time) return "collect thread CPU time to tell waiting from running";
      if (!sd.causes.empty() && (sd.causes.front().cause == Cause::decode_starved || sd.causes.front().cause == Cause::read_starved))
        return "the producers waited for a CPU (runnable, not running): the host is oversubscribed — more threads than cores, or a busy host?";
      if (split != nullptr && split->decode_cpu_ratio >= 0 && split->decode_cpu_ratio < th.contention_cpu_ratio)
        return "decode threads ran only part of their wall time: CPU contention (more threads than cores, or a busy host)?";
      if (ix.loop_starved())
        return fmt::format("the loop itself waited for a CPU {:.0f} % of the time it could run: the host's cores are all taken — "
            "more workers would take theirs from the loop; make each sample cheaper or give the job more cores",
            100 * ix.loop_denied);
      if (ix.decoders_fill_cores())
        return fmt::format("decoding is CPU-bound and its {} thread{} + the loop{} already fill the {} usable cores: more workers "
            "cannot run — make each sample cheaper (a cheaper transform; for images DCT-scaled / region decode or a smaller size)",
            ix.decode_threads, ix.decode_threads == 1 ? "" : "s",
            ix.loop_cpu >= 0 ? fmt::format(" (on a CPU {:.0f} % of its time)", 100 * ix.loop_cpu) : "", ix.cores);
      if (ix.decoders_unseen)
        return "decoding: " + ix.unseen_decoders_why();
      if (ix.loop_decodes)
        return std::string("decoding: ") + TraceIndex::kLoopDecodesWhy;
      return "decoding is CPU-bound: more workers, DCT-scaled / region decode, or a cheaper transform";
    case Verdict::submission:
      if (!sd.causes.empty() && sd.causes.front().cause == Cause::launch_rate)
        return fmt::format(
            "the host issued {} kernels, one every {:.1f} µs ({:.1f} µs inside each launch call), while each ran {:.1f} µs on the device: "
            "capture the step in a CUDA Graph, fuse into fewer, larger kernels, or give the launching thread a core of its own",
            sd.launch.launches, sd.launch.host_us_between_launches, sd.launch.host_us_per_launch, sd.launch.device_us_per_kernel);
      if (!sd.causes.empty() && sd.causes.front().cause == Cause::host_paced)
        return "the device waited for the loop to launch its next work (host-paced, outside any wait for input): what does "
            "the loop run on the CPU between kernels (torch.profiler, py-spy)? Capture the step (CUDA Graphs, torch.compile) "
            "or move that work off the step";
      if (!sd.causes.empty() && sd.causes.front().cause == Cause::consumer_starved)
        return "the submitting thread waited for a CPU (runnable, not running) inside the step: the host is oversubscribed — "
            "give that thread a core of its own";
      return top_cause.empty() ? "which CUDA call blocks?" : fmt::format("why does '{}' block the consumer?", top_cause);
    case Verdict::mixed:
      return fmt::format("two causes share this stall: look at {} and {} separately", class_name(sd.top), class_name(sd.second));
    case Verdict::unattributed:
      return "the consumer was outside any wait/submit range: add ranges around that code";
    case Verdict::input:
      return
          "the loop waited for a batch whose producers left no records in this trace, so retrieval and decoding are not told apart: "
          "record them too — a PyTorch script under `stalldx record` (its hook times the DataLoader's workers; a torch.profiler trace "
          "has none of them: annotate __getitem__, or profile with num_workers=0), any other program with ranges named read and "
          "decode around its producers' work";
    case Verdict::no_device_records: return {};
  }
  return {};
}

}  // namespace stalldx::diagnose
