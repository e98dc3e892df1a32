// Checked output: every file stalldx writes, and its standard output, go through here so that no write
// failure is silent and no file that is not ours is destroyed.
//
//   if (Status st = check_output_path(path, {.kind = "trace", .forbidden_dir = dataset}); !st) ...
//   if (Status st = write_file_atomic(path, text); !st) ...   // temp file + fsync + rename
//   if (Status st = write_stdout(report); !st) return 1;       // e.g. > /dev/full
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "stalldx/status.h"

namespace stalldx {

struct OutputCheck {
  std::string kind = "output";   // "trace", "sweep results": names the file in messages
  std::string forbidden_dir;     // refuse paths inside this folder (the dataset); "" = none
  bool replaced = false;         // out: an existing regular file will be replaced
};

// Refuses (invalid_argument) a path that exists and is not a regular file (a device node, a FIFO, a
// folder) or lies inside `forbidden_dir`; checks (io_error) that the folder accepts a new file now.
// Sets `check.replaced` when a regular file is there already.
Status check_output_path(const std::string& path, OutputCheck& check);

// Writes `content` to `path` through `path.partial` (fsync'ed, then renamed over it): a reader never
// sees half a file, and on failure (disk full) the old file is untouched and no partial is left.
// Refuses a path that exists as anything but a regular file.
// A new file `path`.partial-XXXXXX, created exclusively (a file or link already at that name is never
// followed or truncated); its name in `tmp`, its descriptor returned (-1 with errno on failure).
int create_temp_beside(const std::string& path, std::string& tmp);
Status write_file_atomic(const std::string& path, std::string_view content);

// Appends `content` to `path` (created when missing) and fsyncs it: a line that was reported written is
// on disk. Refuses a path that exists as anything but a regular file.
Status append_file(const std::string& path, std::string_view content);

// One file a command reads or writes, for check_distinct_files: `what` names it in messages ("--html",
// "the trace read").
struct NamedPath {
  std::string what;
  std::string path;
  bool output = true;  // false: a file the command only reads (two inputs may be the same file)
};
// invalid_argument when two of `files` (empty paths skipped) are the same file and one of them is an
// output — an output that would be written over an input, or two outputs over each other. Links and spellings are resolved ("x.json",
// "./x.json", a link to it); files that do not exist yet compare by their absolute path.
Status check_distinct_files(const std::vector<NamedPath>& files);

// invalid_argument when `path` exists as anything but a regular file (what every writer here refuses
// to replace or append to); OK when it is a regular file or does not exist.
Status refuse_non_regular(const std::string& path);

// Writes to standard output and flushes; an error (EPIPE, ENOSPC, EBADF) is an io_error.
Status write_stdout(std::string_view text);
// Writes `text` to stderr, ignoring failure: progress and error messages must not end a program whose
// reader went away (`| head` closes the pipe; fmt::print would throw and abort). Never throws.
void write_stderr(std::string_view text) noexcept;

}  // namespace stalldx
