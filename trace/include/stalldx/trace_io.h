// Trace file I/O: Chrome Trace Event JSON (opens in ui.perfetto.dev and chrome://tracing).
// write_trace_json and read_trace_json are inverses: read(write(t)) == t.
#pragma once

#include <iosfwd>
#include <cstdint>
#include <string>

#include "stalldx/status.h"
#include "stalldx/trace_model.h"

namespace stalldx {

Status write_trace_json(const Trace& trace, std::ostream& out);
// Through `path.partial` and a rename; refuses to replace anything but a regular file. Check the path
// before a long run with check_output_path (stalldx/output_file.h).
Status write_trace_file(const Trace& trace, const std::string& path);
// On malformed input: a parse_error Status naming the byte offset and what was expected.
Status read_trace_json(const std::string& text, Trace& out);
// Reads plain or gzip-compressed files (torch.profiler writes .json.gz). A file that is not a stalldx
// trace (a Kineto trace, another tool's Chrome trace) is refused with a message naming what it is.
Status read_trace_file(const std::string& path, Trace& out);
// A whole file as text, gunzipped when it is gzip.
Status read_text_file(const std::string& path, std::string& out);

// Bounds on what read_text_file expands: `max_bytes` in all (default 4 GiB) and, for gzip, `max_ratio`
// times the compressed size (default 200x, at least 64 MB); $STALLDX_MAX_INPUT_MB replaces both. A file
// past them is refused with a message naming the bound and the variable. A pipe is read (diagnose <(zcat x)).
inline constexpr const char* kMaxInputEnv = "STALLDX_MAX_INPUT_MB";
struct InputLimits {
  std::uint64_t max_bytes = std::uint64_t{4} << 30;
  std::uint64_t max_ratio = 200;
};
InputLimits input_limits();

}  // namespace stalldx
