#include "stalldx/toml_guard.h"

#include <fmt/format.h>

#include <cstdint>

namespace stalldx {

namespace {

// The code points toml++ 3.3's is_non_ascii_horizontal_whitespace() cannot classify.
bool unclassifiable(char32_t c) {
  return (c >= 0xA1 && c <= 0x499) || (c >= 0x2C8E && c <= 0x3087 && c != 0x3000) || (c >= 0xFB26 && c <= 0xFEFE);
}

// Decodes one UTF-8 sequence at text[i] into `c` and its length; an invalid byte is one unit of itself
// (toml++ refuses it on its own).
std::size_t decode(std::string_view text, std::size_t i, char32_t& c) {
  const auto b = static_cast<unsigned char>(text[i]);
  std::size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > text.size()) {
    c = 0xFFFD;
    return 1;
  }
  c = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
  for (std::size_t k = 1; k < n; ++k) {
    const auto cb = static_cast<unsigned char>(text[i + k]);
    if ((cb & 0xC0) != 0x80) {
      c = 0xFFFD;
      return 1;
    }
    c = (c << 6) | (cb & 0x3F);
  }
  return n;
}

enum class Where { bare, comment, basic, literal, multi_basic, multi_literal };

}  // namespace

Status guard_toml_text(std::string_view text, const std::string& origin, std::string& out) {
  out.clear();
  out.reserve(text.size());
  Where w = Where::bare;
  int line = 1;
  for (std::size_t i = 0; i < text.size();) {
    const char ch = text[i];
    auto starts = [&](std::string_view s) { return text.substr(i, s.size()) == s; };
    if (static_cast<unsigned char>(ch) < 0x80) {
      std::size_t take = 1;
      switch (w) {
        case Where::bare:
          if (ch == '#') w = Where::comment;
          else if (starts("\"\"\"")) { w = Where::multi_basic; take = 3; }
          else if (starts("'''")) { w = Where::multi_literal; take = 3; }
          else if (ch == '"') w = Where::basic;
          else if (ch == '\'') w = Where::literal;
          break;
        case Where::comment:
          if (ch == '\n') w = Where::bare;
          break;
        case Where::basic:
          if (ch == '\\' && i + 1 < text.size()) take = 2;  // an escape: the next character is not a quote
          else if (ch == '"' || ch == '\n') w = Where::bare;
          break;
        case Where::literal:
          if (ch == '\'' || ch == '\n') w = Where::bare;
          break;
        case Where::multi_basic:
          if (ch == '\\' && i + 1 < text.size() && text[i + 1] != '\n') take = 2;
          else if (starts("\"\"\"")) { w = Where::bare; take = 3; }
          break;
        case Where::multi_literal:
          if (starts("'''")) { w = Where::bare; take = 3; }
          break;
      }
      for (std::size_t k = 0; k < take && i + k < text.size(); ++k) line += text[i + k] == '\n';
      out.append(text.substr(i, take));
      i += take;
      continue;
    }
    char32_t c = 0;
    const std::size_t n = decode(text, i, c);
    if (!unclassifiable(c)) {
      out.append(text.substr(i, n));
    } else if (w == Where::basic || w == Where::multi_basic) {
      out += fmt::format("\\u{:04X}", static_cast<std::uint32_t>(c));
    } else if (w == Where::comment) {
      out += '?';
    } else {
      return Status::parse(fmt::format("{}:{}: character U+{:04X} is not accepted {} (write it as \\u{:04X} in a \"double-quoted\" string)",
                                       origin, line, static_cast<std::uint32_t>(c),
                                       w == Where::bare ? "outside a string" : "in a 'literal' string", static_cast<std::uint32_t>(c)));
    }
    i += n;
  }
  return Status::ok();
}

}  // namespace stalldx
