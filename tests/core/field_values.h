// Test helper: for any run field, a valid value that differs from its default.
#pragma once

#include <string>

#include "stalldx/run_config.h"

namespace stalldx::testing {

inline std::string raw_alternate_value(const RunField& f) {
  static const RunConfig defaults{};
  const std::string v = f.value(defaults);
  switch (f.type) {
    case FieldType::integer:
    case FieldType::unsigned_integer: {
      const double d = std::stod(v);
      return d + 1 <= f.max ? std::to_string(static_cast<long long>(d + 1)) : std::to_string(static_cast<long long>(f.min));
    }
    case FieldType::real: {
      const double d = std::stod(v);
      return d + 0.5 <= f.max ? std::to_string(d + 0.5) : std::to_string(f.min);
    }
    case FieldType::boolean: return v == "true" ? "false" : "true";
    case FieldType::text: return "/tmp/it's a path";
    case FieldType::choice:
      for (std::size_t i = 0; i < f.choices.size(); ++i)
        if (f.choices[i] == v) return std::string(f.choices[(i + 1) % f.choices.size()]);
  }
  return v;
}

// The same in the field's own text form ("0.5", not "0.500000").
inline std::string alternate_value(const RunField& f) {
  RunConfig c;
  (void)f.assign(c, raw_alternate_value(f));
  return f.value(c);
}

// A config with every field at its alternate value.
inline RunConfig alternate_config() {
  RunConfig c;
  for (const RunField& f : run_fields()) (void)f.assign(c, alternate_value(f));
  return c;
}

}  // namespace stalldx::testing
