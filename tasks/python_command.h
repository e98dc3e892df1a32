// Internal to stalldx_tasks: what a recorded command line says about the Python hook — whether CMD starts
// a Python interpreter, and whether its flags keep the hook out (it rides on PYTHONPATH and site's
// sitecustomize: `-I` and `-E` ignore PYTHONPATH, `-S` skips site).
#pragma once

#include <string>
#include <vector>

namespace stalldx::tasks {

struct PythonCommand {
  bool python = false;     // CMD runs a Python interpreter (python, python3, python3.11, ..., directly or through env)
  std::string blocking;    // the interpreter flag that keeps the hook out ("-I", "-E", "-S"), empty when none
};

// Reads CMD as the shell would run it: `env [-i|-u NAME|NAME=VALUE]... python [flags] script ...`.
// Options after the script, `-c` code or `-m` module belong to the program and are not read.
PythonCommand read_python_command(const std::vector<std::string>& command);

}  // namespace stalldx::tasks
