// Internal to libstalldx_inject: a recorded process's durable parts (see <stalldx/record/part_format.h>).
// Every function is safe to call from any thread of the recorded program; the range paths take no lock
// after a thread's first range and never allocate after a name's first sight on that thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "stalldx/record/part_format.h"

namespace stalldx::inject {

// False when STALLDX_RECORD_DIR is unset (then nothing is recorded).
bool enabled() noexcept;

// Ids of names / domains in this process's names file; registered on first sight.
std::uint32_t name_id(std::string_view text) noexcept;
std::uint32_t domain_id(std::string_view text) noexcept;
void name_thread(std::int64_t tid, std::string_view name) noexcept;

// Push/pop ranges of the calling thread; pop returns false with no open push (counted).
// `payload`: the range's integer NVTX payload (>= 0) or -1.
void push(std::uint32_t name, std::uint32_t domain, std::uint32_t category, std::int64_t payload = -1) noexcept;
bool pop() noexcept;
// Start/end ranges may end on another thread: the id is the record's address (0 = not recorded).
std::uint64_t start(std::uint32_t name, std::uint32_t domain, std::uint32_t category, std::int64_t payload = -1) noexcept;
void end(std::uint64_t id) noexcept;

// A range written whole after the fact (the Python hook measures its own begin/end on CLOCK_MONOTONIC
// and the thread's CPU time and run-queue delay inside it; -1 = not measured).
void complete(std::uint32_t name, std::uint32_t domain, std::uint32_t category, std::int64_t payload, std::int64_t begin_ns,
              std::int64_t end_ns, std::int64_t cpu_ns, std::int64_t runq_ns) noexcept;
// The calling thread's CLOCK_MONOTONIC, CPU time and run-queue delay (ns; runq -1 where unavailable).
void thread_clocks(std::int64_t& now, std::int64_t& cpu, std::int64_t& runq) noexcept;
// One line of this process's names file saying what the Python hook did ('h' lines: "torch 2.11 patched").
void note_python_hook(std::string_view text) noexcept;

// The record directory (empty when disabled).
const char* record_dir() noexcept;

}  // namespace stalldx::inject
