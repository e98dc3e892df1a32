#include "python_command.h"

#include <cstddef>
#include <string_view>

namespace stalldx::tasks {

namespace {
std::string_view base_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// python, python3, python3.12, python3.12d, pythonw — not python-config or a script named python_x.
bool is_interpreter(std::string_view path) {
  std::string_view b = base_name(path);
  if (b.substr(0, 6) != "python") return false;
  for (char c : b.substr(6))
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'd' || c == 'm' || c == 't' || c == 'w')) return false;
  return true;
}
}  // namespace

PythonCommand read_python_command(const std::vector<std::string>& command) {
  PythonCommand out;
  std::size_t i = 0;
  if (i < command.size() && base_name(command[i]) == "env") {  // env's own options and assignments
    for (++i; i < command.size(); ++i) {
      const std::string& a = command[i];
      if (a == "-u" || a == "--unset" || a == "-C" || a == "--chdir") ++i;
      else if (a == "--") continue;
      else if (!(a.size() > 1 && a[0] == '-') && a.find('=') == std::string::npos) break;
    }
  }
  if (i >= command.size() || !is_interpreter(command[i])) return out;
  out.python = true;
  for (++i; i < command.size(); ++i) {
    const std::string& a = command[i];
    if (a.size() < 2 || a[0] != '-' || a == "--") return out;  // the script (or stdin, "-") begins the program's arguments
    if (a[1] == '-') {                                           // --version, --help, --check-hash-based-pycs MODE
      if (a == "--check-hash-based-pycs") ++i;
      continue;
    }
    for (std::size_t k = 1; k < a.size(); ++k) {
      const char f = a[k];
      if (f == 'I' || f == 'E' || f == 'S') {
        out.blocking = std::string("-") + f;
        return out;
      }
      if (f == 'c' || f == 'm') return out;  // code or a module: the rest is the program's
      if (f == 'W' || f == 'X') {            // an option with an argument: the rest of this word, or the next
        if (k + 1 == a.size()) ++i;
        break;
      }
    }
  }
  return out;
}

}  // namespace stalldx::tasks
