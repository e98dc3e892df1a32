// docs/configuration.md, generated from the field table: a test compares the file to this text, so the
// reference cannot drift from the options themselves.
#include <fmt/format.h>

#include "stalldx/run_config.h"

namespace stalldx {

namespace {
// A bound of an integer field as people write it (no exponent).
std::string whole(double v) {
  if (v >= 1.8e19) return "2^64 − 1";
  return fmt::format("{}", static_cast<long long>(v));
}

std::string kind(const RunField& f) {
  switch (f.type) {
    case FieldType::integer:
    case FieldType::unsigned_integer: return fmt::format("integer, {} to {}", whole(f.min), whole(f.max));
    case FieldType::real: return fmt::format("number, {:g} to {:g}", f.min, f.max);
    case FieldType::boolean: return f.has(kNegatedFlag) ? "flag (`--no-…` clears it)" : "flag";
    case FieldType::text: return "text";
    case FieldType::choice: {
      std::string s = "one of ";
      for (std::size_t i = 0; i < f.choices.size(); ++i) s += fmt::format("{}`{}`", i ? ", " : "", f.choices[i]);
      return s;
    }
  }
  return "";
}
std::string cell(std::string_view s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}
}  // namespace

std::string run_config_reference() {
  std::string s =
      "# Configuration reference\n\n"
      "Every option of `stalldx run` (and of `sweep`, `tune` and `eval`'s scenario files), generated from the\n"
      "field table in `trace/include/stalldx/run_config.h` — a test fails when this page and the table differ.\n"
      "On the command line an option is `--name VALUE` (a flag: `--name`); in a `--config FILE` it is `name =\n"
      "VALUE` in a `[run]` table (a `[sweep]` table for `sweep`). Values outside their range, NaN and infinity\n"
      "are refused naming the option (and `FILE:LINE` in a config).\n\n"
      "| option | value | default | what it does |\n|---|---|---|---|\n";
  const RunConfig defaults;
  for (const RunField& f : run_fields()) {
    std::string d = f.value(defaults);
    if (d.empty()) d = "(none)";
    std::string what(f.help);
    if (f.has(kRunOnly)) what += "; `run` only";
    if (f.has(kSweepAxis)) what += "; a sweep lists its own values";
    s += fmt::format("| `--{}` | {} | `{}` | {} |\n", f.option(), cell(kind(f)), cell(d), cell(what));
  }
  return s;
}

}  // namespace stalldx
