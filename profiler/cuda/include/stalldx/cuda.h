// CUDA collectors for a stalldx Session: CUPTI activity (runtime calls, kernels, copies with their host
// memory kind, memsets, synchronization, overhead) on the host's CLOCK_MONOTONIC, with each step's id as
// CUPTI external correlation, and an NVTX mirror of every range (domain "stalldx", category = role).
//
//   stalldx::Session session;
//   stalldx::cuda::install(session);   // before start; the session owns the collectors
//   session.start({});                 // SessionOptions::cupti / ::nvtx turn each on or off
#pragma once

#include <atomic>
#include <cstdint>

#include "stalldx/profiler.h"

namespace stalldx::cuda {

// Adds the CUPTI collector and the NVTX mirror to `session` (before session.start()). CUPTI is
// process-wide: one session at a time may run it.
Status install(Session& session);
// Adds the CUPTI collector alone: for a tool that takes NVTX ranges itself (the injection library).
Status install_cupti(Session& session);

// Makes a later detach_cupti() possible: subscribes to the API callbacks the detach needs. Called by the
// thread that starts a window's session, right after it (at a step boundary, not inside a CUDA call), so
// that closing the window enables nothing while the program runs. Idempotent until a finalize.
void arm_cupti_detach();
// CUPTI's dynamic detach, after the session that ran CUPTI stopped: the next CUDA API call of any thread
// finalizes CUPTI at its exit site (where CUPTI documents it is safe), and from then on the program's
// CUDA calls pay nothing until a session starts again (which calls off a request not yet done). Only a
// flag: nothing happens unless arm_cupti_detach() ran since the last finalize.
void detach_cupti();
// Has the calling thread (one of ours, not the program's) make the finalize of a detach requested:
// cheap CUDA calls (a context query), whose exits are quiet moments when no program thread is inside a
// call, every millisecond until the detach is done or called off, `give_up` is set or `max_ns` passed.
// A program call's quiet exit may finalize meanwhile too. True when no detach is pending on return.
bool drive_cupti_detach(const std::atomic<bool>& give_up, std::int64_t max_ns);
// CUPTI made ready for the next session, off the program's threads: a detach not yet done is called off,
// or, finalized, CUPTI is initialized again and its activity callbacks registered (records stay off), so
// that the next start, at a step boundary on a program thread, only turns records on. The caller
// serializes it with sessions' start and stop.
void prepare_cupti();
// Called on the thread that made a finalize, right after it (CLOCK_MONOTONIC ns; `by_driver`: the thread
// driving it, else a program thread's call exit). Inside a CUPTI callback: no CUDA call, no wait.
using FinalizeObserver = void (*)(std::int64_t begin_ns, std::int64_t end_ns, bool by_driver);
void set_finalize_observer(FinalizeObserver observer);
// Whether the program was seen using CUDA graphs (capturing, instantiating or launching one) while a
// detach was armed: from then on detach_cupti() does nothing (a graph replayed after a finalize failed),
// so CUPTI stays attached between windows with its records off.
bool cuda_graphs_seen();
// Detaches finished so far in this process (requests honoured).
long cupti_detaches();
// One line on `fd` about the detaches (how many, the last finalize's thread and time); async-signal-
// safe, for a crash handler.
void write_detach_state(int fd);

}  // namespace stalldx::cuda
