#include "config_check.h"
#include "stalldx/run_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

namespace stalldx::cli {

namespace {
std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// Drops a '#' comment that is not inside a quoted string.
std::string strip_comment(const std::string& line) {
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '"' && (i == 0 || line[i - 1] != '\\')) quoted = !quoted;
    if (line[i] == '#' && !quoted) return line.substr(0, i);
  }
  return line;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest(const std::string& key, const std::set<std::string>& valid) {
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const std::string& v : valid) scored.emplace_back(edit_distance(key, v), v);
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < scored.size() && i < 3; ++i) out.push_back(scored[i].second);
  return fmt::format("{}", fmt::join(out, ", "));
}

std::set<std::string> keys_of(CLI::App& sub) {
  std::set<std::string> keys;
  for (const CLI::Option* o : sub.get_options())
    for (const std::string& n : o->get_lnames())
      if (n != "help" && n != "config") keys.insert(n);
  return keys;
}
}  // namespace

std::string config_argument(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) return argv[i + 1];
    if (a.rfind("--config=", 0) == 0) return a.substr(9);
  }
  return "";
}

Status check_config_file(const std::string& path, CLI::App& app) {
  std::ifstream in(path);
  if (!in) return Status::invalid(fmt::format("--config '{}': cannot open it", path));
  std::string line, table;
  std::set<std::string> tables, seen;
  std::set<std::string> valid;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string t = trim(strip_comment(line));
    if (t.empty()) continue;
    if (t.front() == '[') {
      if (t.back() != ']' || t.size() < 3) return Status::invalid(fmt::format("{}:{}: malformed table header '{}'", path, lineno, t));
      table = trim(t.substr(1, t.size() - 2));
      if (!tables.insert(table).second)
        return Status::invalid(fmt::format("{}:{}: table [{}] appears twice (the second would silently override the first)", path, lineno, table));
      CLI::App* sub = nullptr;
      try {
        sub = app.get_subcommand(table);
      } catch (const CLI::OptionNotFound&) {
      }
      if (sub == nullptr) {
        std::set<std::string> names;
        for (const CLI::App* s : app.get_subcommands({})) names.insert(s->get_name());
        return Status::invalid(fmt::format("{}:{}: unknown table [{}]; tables are subcommands: {}", path, lineno, table, fmt::join(names, ", ")));
      }
      valid = keys_of(*sub);
      seen.clear();
      continue;
    }
    const auto eq = t.find('=');
    if (eq == std::string::npos) return Status::invalid(fmt::format("{}:{}: expected 'key = value', got '{}'", path, lineno, t));
    const std::string key = trim(t.substr(0, eq));
    if (table.empty())
      return Status::invalid(fmt::format("{}:{}: key '{}' outside a table: put it under [run] or [sweep]", path, lineno, key));
    if (trim(t.substr(eq + 1)).empty()) return Status::invalid(fmt::format("{}:{}: key '{}' has no value", path, lineno, key));
    if (valid.count(key) == 0)
      return Status::invalid(fmt::format("{}:{}: unknown key '{}' in [{}]; nearest valid keys: {} (all: stalldx {} --help)", path, lineno,
                                         key, table, nearest(key, valid), table));
    if (!seen.insert(key).second) return Status::invalid(fmt::format("{}:{}: key '{}' appears twice in [{}]", path, lineno, key, table));
    // A [run] value of the wrong type or out of range is named here, with its file and line (the option
    // parser would name only the option). [sweep] values are lists, checked by sweep itself.
    if (table == "run")
      if (const RunField* f = find_run_field(key)) {
        std::string value = trim(t.substr(eq + 1));
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
        RunConfig probe;
        if (Status st = f->assign(probe, value); !st.is_ok()) return Status::invalid(fmt::format("{}:{}: {}", path, lineno, st.message()));
      }
  }
  return Status::ok();
}

}  // namespace stalldx::cli
