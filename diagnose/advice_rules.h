// Internal: the advice rules of the run summary, one per stall class (recommend.cpp runs them). Each
// reads the steady steps after start-up (`basis`), the run's ratios (`sum`), the recorded config and the
// host's facts — typed, never text — and never proposes what the config already has, nor more threads on
// a host whose threads were already starved of CPU.
#pragma once

#include <string>

#include "evaluation_passes.h"
#include "iterator_restarts.h"
#include "loader_waits.h"
#include "startup_steps.h"
#include "trace_index.h"

namespace stalldx::diagnose {

struct AdviceInputs {
  const Trace& t;
  const TraceIndex& ix;
  const Thresholds& th;
  const Report& rep;
  const RunSummary& sum;    // every steady step (ratios, launch figures, the dominant verdict)
  const RunSummary& basis;  // steady steps after start-up: the stall the advice weighs
  const StartupSteps& startup;
  std::vector<Advised>& advice;  // appended to

  const RecordedConfig& recorded = ix.recorded;
  const RunConfig& cfg = recorded.config;
  const HostFacts& host = t.meta.host_facts;
  bool ours = recorded.known<&RunConfig::workers>();  // our pipeline's run: its knobs can be named
  int cores = host.cores();

  void say(Advice kind, std::string text) const { advice.push_back(Advised{kind, std::move(text)}); }
  double cause(Cause c) const { return basis.cause_ms[static_cast<std::size_t>(c)]; }
  double stall(StallClass c) const { return basis.stall_ms[static_cast<std::size_t>(c)]; }
  // A class's share of a stall that matters (>= 2% of the steady window); 0 when the stall does not.
  double share(StallClass c) const;
  // "N competing threads in this run; load L on C cores" (what else wants the host's CPUs), or "".
  std::string competition() const;
};

void advise_startup(const AdviceInputs& in);
// A new DataLoader iterator every step (`next(iter(loader))`): its workers start anew each step. Needs
// no device records (the loop's shape, from the batches its steps waited for).
void advise_iterator_per_step(const AdviceInputs& in, const IteratorRestarts& restarts);
// New iterators at epochs' starts (not every step) whose worker start-up costs kWorkerRestartShare of the
// steady window or more: persistent workers. Never for a persistent iterator (its passes are restarts).
inline constexpr double kWorkerRestartShare = 0.1;
void advise_worker_restarts(const AdviceInputs& in, const IteratorRestarts& restarts);
// Evaluation passes inside training steps that take kEvaluationShare of the steady window or more: how
// much of it waited for their loaders or started their workers, and what keeps those (persistent workers).
inline constexpr double kEvaluationShare = 0.05;
// "More workers" names which of several loaders advanced each step when its batches took this share of the waits.
inline constexpr double kDominantLoaderShare = 0.7;
void advise_evaluation_in_steps(const AdviceInputs& in, const EvaluationPasses& passes);
// Input that arrives unevenly (spikes, bursts) or keeps up.
void advise_input_shape(const AdviceInputs& in);
void advise_retrieval(const AdviceInputs& in);
void advise_decoding(const AdviceInputs& in);
void advise_submission(const AdviceInputs& in);
void advise_unattributed(const AdviceInputs& in);

}  // namespace stalldx::diagnose
