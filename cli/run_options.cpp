#include "run_options.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace stalldx::cli {

CLI::Validator finite_in(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || end != text.data() + text.size()) return fmt::format("'{}' is not a number", text);
        if (!std::isfinite(v) || v < lo || v > hi) return fmt::format("'{}' must be a finite number in [{}, {}]", text, lo, hi);
        return {};
      },
      fmt::format("FINITE in [{} - {}]", lo, hi));
}

void add_run_options(CLI::App& app, RunConfig& c, OptionSet set) {
  static const RunConfig defaults{};
  for (const RunField& f : run_fields()) {
    if (set == OptionSet::sweep && (f.has(kSweepAxis) || f.has(kRunOnly))) continue;
    const std::string opt = "--" + f.option();
    if (f.has(kNegatedFlag)) {  // --no-<option> turns it off (it is on by default)
      app.add_flag_function(
          "--no-" + f.option(),
          [&c, &f](std::int64_t count) {
            if (Status st = f.assign(c, count > 0 ? "false" : "true"); !st.is_ok()) throw CLI::ValidationError(st.message());
          },
          std::string(f.help));
      continue;
    }
    if (f.has(kFlag)) {
      // A flag sets "true"; a TOML key may say true or false.
      app.add_flag_function(
             opt,
             [&c, &f](std::int64_t count) {
               if (Status st = f.assign(c, count > 0 ? "true" : "false"); !st.is_ok()) throw CLI::ValidationError(st.message());
             },
             std::string(f.help));
      continue;
    }
    std::string type;
    switch (f.type) {
      case FieldType::integer:
      case FieldType::unsigned_integer: type = fmt::format("INT in [{}, {}]", f.min, f.max); break;
      case FieldType::real: type = fmt::format("NUMBER in [{}, {}]", f.min, f.max); break;
      case FieldType::boolean: type = "true|false"; break;
      case FieldType::text: type = "TEXT"; break;
      case FieldType::choice: type = fmt::format("{}", fmt::join(f.choices, "|")); break;
    }
    app.add_option_function<std::string>(
           opt,
           [&c, &f](const std::string& text) {
             if (Status st = f.assign(c, text); !st.is_ok()) throw CLI::ValidationError(st.message());
           },
           std::string(f.help))
        ->type_name(type)
        ->default_str(f.value(defaults));
  }
}

}  // namespace stalldx::cli
