// `stalldx record -- nvtx_loop ARGS` run from a test: its exit code, what it printed and its trace.
#pragma once

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "test_support.h"

namespace stalldx::record {

struct Recorded {
  int rc = -1;
  std::string log, trace_path, dir;
};

#ifdef NVTX_LOOP
inline Recorded record(const std::string& loop_args, const std::string& record_args = "") {
  Recorded r;
  r.dir = stalldx::testing::temp_dir("record");
  r.trace_path = r.dir + "/t.json";
  const std::string cmd = fmt::format("{} record --trace {} {} -- {} {} > {}/log.txt 2>&1", STALLDX_BINARY, r.trace_path, record_args,
                                      NVTX_LOOP, loop_args, r.dir);
  const int status = std::system(cmd.c_str());
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.log = stalldx::testing::read_file(r.dir + "/log.txt");
  return r;
}
#endif

}  // namespace stalldx::record
