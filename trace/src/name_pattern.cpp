#include "stalldx/name_pattern.h"

#include <fmt/format.h>
#include <re2/re2.h>

namespace stalldx {

namespace {
// Memory for one compiled pattern: ample for any pattern a person writes; a pathological one (20,000
// nested groups, a{1000}{1000}) fails to compile with a message instead of exhausting memory.
constexpr std::int64_t kMaxProgramBytes = 8 << 20;

std::unique_ptr<re2::RE2> build(std::string_view pattern, bool case_insensitive) {
  re2::RE2::Options o;
  o.set_log_errors(false);
  o.set_max_mem(kMaxProgramBytes);
  o.set_case_sensitive(!case_insensitive);
  return std::make_unique<re2::RE2>(re2::StringPiece(pattern.data(), pattern.size()), o);
}
}  // namespace

NamePattern::NamePattern() = default;
NamePattern::~NamePattern() = default;
NamePattern::NamePattern(NamePattern&&) noexcept = default;
NamePattern& NamePattern::operator=(NamePattern&&) noexcept = default;
NamePattern::NamePattern(const NamePattern& other)
    : pattern_(other.pattern_), case_insensitive_(other.case_insensitive_), re_(other.re_ ? build(other.pattern_, other.case_insensitive_) : nullptr) {}
NamePattern& NamePattern::operator=(const NamePattern& other) {
  if (this != &other) *this = NamePattern(other);
  return *this;
}

Status NamePattern::compile(std::string_view pattern, std::string_view origin, NamePattern& out, bool case_insensitive) {
  std::unique_ptr<re2::RE2> re = build(pattern, case_insensitive);
  if (!re->ok())
    return Status::invalid(fmt::format("{}: \"{}\" is not a regular expression this tool accepts: {}", origin,
                                       pattern.substr(0, 200), re->error()));
  out.pattern_ = std::string(pattern);
  out.case_insensitive_ = case_insensitive;
  out.re_ = std::move(re);
  return Status::ok();
}

bool NamePattern::found_in(std::string_view name) const {
  return re_ != nullptr && re2::RE2::PartialMatch(re2::StringPiece(name.data(), name.size()), *re_);
}

}  // namespace stalldx
