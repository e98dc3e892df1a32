// The files a recorded process leaves in the parts folder (part_format.h), read for the merge
// (merge.cpp): its names, its command line, each thread's ranges. Internal to the trace library.
#pragma once

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stalldx/record/merge.h"
#include "stalldx/record/sampling.h"

namespace stalldx::record {

template <typename T>
bool parse_int(std::string_view s, T& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

struct ProcessParts {
  RecordedProcess info;
  std::unordered_map<std::uint32_t, std::string> names, domains;
  std::unordered_map<std::int64_t, std::string> thread_names;
  std::vector<std::filesystem::path> range_files;
  std::map<std::int64_t, std::filesystem::path> cuda_files;  // window number -> CUPTI part (-1: the whole run's)
  std::optional<WindowMarks> windows;                        // sampled: the device windows it marked
};

// "<pid>.cuda.json" -> -1, "<pid>.cuda.w7.json" -> 7; false for any other name.
bool cuda_part_window(std::string_view rest, std::int64_t& window);
// "<pid>.names": range names, domains, thread names, the Python hook's line, the rank.
void read_names(const std::filesystem::path& path, ProcessParts& p, MergeReport& rep);
// "<pid>.proc": the parent and the command line.
void read_proc(const std::filesystem::path& path, ProcessParts& p, MergeReport& rep);
// A time no recording can hold: not after its begin, or (the recording's end known) after that end —
// CLOCK_MONOTONIC never runs ahead of the merge. Such records are dropped and counted, never summed.
bool impossible(std::int64_t begin_ns, std::int64_t end_ns, std::int64_t recording_end_ns);
// Reads one thread's range file into `t` (lane `lane`). Only the records the header publishes count.
Status read_ranges(const std::filesystem::path& path, const ProcessParts& p, const RoleMap& roles, const MergeOptions& o,
                   std::uint32_t lane, Trace& t, MergeReport& rep, std::int64_t& tid, std::uint64_t& pthread, bool& any_cpu);

}  // namespace stalldx::record
