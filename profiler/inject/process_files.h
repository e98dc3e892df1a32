// Internal to libstalldx_inject: the recorded process's own files in the record directory — its names
// file (<pid>.names: names, domains, thread names, launcher rank, the Python hook's notes) and its .proc
// line — and the one-time set-up from the environment. Per-thread range files are part_writer's.
// Registration takes the process lock; nothing here is on a range's path after a name's first sight.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace stalldx::inject {

// The record directory STALLDX_RECORD_DIR named at the first call (empty: recording is off). Set once;
// valid for the life of the process.
const std::string& record_directory() noexcept;
// Records a thread's part holds (kPartRangeCapacity, or less where kPartCapacityEnv says). Set once.
std::uint64_t part_capacity() noexcept;
// Bumped in a fork's child: a thread whose part was made under another generation makes a new one.
std::uint64_t process_generation() noexcept;
// This process's pid, its names and .proc files opened on first call (and again in a fork's child).
// Takes the process lock; may throw std::bad_alloc.
std::int64_t open_process_files();
// The id of a range name (registered and written to the names file on first sight). Takes the process
// lock; may throw std::bad_alloc.
std::uint32_t register_name(std::string_view text);

}  // namespace stalldx::inject
