// Live step boundaries in a recorded process and the device-window schedule they drive
// (stalldx/record/sampling.h). Active only when STALLDX_SAMPLE names a sampling plan; otherwise every
// hook is one relaxed load. A name is classified once, at its first registration; a range's begin then
// costs a byte lookup, and only the begin of a step range takes the (step-rate) marks lock.
//
// Which ranges mark steps live (the merger decides the trace's steps afterwards, step_inference.h):
// level 3, --step / a roles file / the built-in step words; level 2, the Python hook's loop iteration;
// level 1, a numbered family (kMinFamily names equal once digits are masked). Boundaries count only
// from the best level seen and from the thread that first gave it.
//
// Each window edge is a line of <pid>.windows (part_format.h): "attach|detach \t window \t ns \t step".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "stalldx/record/sampling.h"

namespace stalldx::inject {

void step_marks_init(const std::string& dir);  // from part_writer's one-time init
void step_marks_after_fork();                  // in the child: fresh levels, schedule and marks file
// A name's step level, stored by id; the caller holds the process's names lock.
void classify_step_name(std::uint32_t id, std::string_view name);
// A range of `name` began at `begin_ns` (a step boundary there when the name marks steps).
void on_range_begin(std::uint32_t name, std::int64_t begin_ns) noexcept;

// The CUDA side's hook, called with the marks lock held at each window edge: attach must have device
// recording on when it returns true (the step's work is recorded), or, when `may_refuse` and the
// recorder is still busy (closing the last window, readying CUPTI), return false at once: no window
// opens, and the attach is asked again at the next boundary — the program's step does not wait on the
// recorder while the window has a later step to open at (on its last one it waits). detach may finish
// on another thread; prepare and release must not block. Their result is ignored.
using WindowHook = bool (*)(record::WindowAction action, std::int64_t window, bool may_refuse);
// Registers the hook; true when a window is open now (the caller then attaches itself), `window` its number.
bool set_window_hook(WindowHook hook, std::int64_t& window) noexcept;
bool sampling() noexcept;
std::int64_t step_boundaries_seen() noexcept;
// Windows by time (one tick a second since CUDA started) while no step boundary has been seen.
void time_tick(std::int64_t seconds) noexcept;
// Serializes the CUDA side's exit with window edges (the marks lock).
void lock_marks() noexcept;
void unlock_marks() noexcept;

}  // namespace stalldx::inject
