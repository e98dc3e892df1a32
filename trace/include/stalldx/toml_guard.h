// Text for toml++, made safe first. toml++ 3.3 (Debian 12's) reaches __builtin_unreachable() — undefined
// behaviour — when it meets a code point of U+00A1–U+0499, U+2C8E–U+3087 or U+FB26–U+FEFE (but
// U+3000) where whitespace may stand (marzer/tomlplusplus#190 and #295, fixed upstream in 2026 by #305;
// found here by roles_fuzz). Roles files and scenario configs may come from anyone, so before toml++
// sees one those code points are written as \uXXXX inside basic strings (the same value), as '?' in
// comments, and refused anywhere else — no valid TOML has them there — naming FILE:LINE.
#pragma once

#include <string>
#include <string_view>

#include "stalldx/status.h"

namespace stalldx {

// `out`: `text` with the code points above escaped or replaced; parse_error naming `origin`:LINE for
// one in a literal string ('...') or outside any string and comment.
Status guard_toml_text(std::string_view text, const std::string& origin, std::string& out);

}  // namespace stalldx
