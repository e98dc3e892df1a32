// Text from outside (range and thread names, command lines, paths) is bytes: Linux allows any of them.
// What stalldx writes is valid UTF-8 (JSON, HTML, SVG) and, on a terminal, free of control characters.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace stalldx {

bool is_valid_utf8(std::string_view s) noexcept;
// `s` with every byte that is not part of a valid UTF-8 sequence replaced by U+FFFD; `replaced` (when
// given) is increased by the number of bytes replaced.
std::string to_valid_utf8(std::string_view s, std::size_t* replaced = nullptr);
// For a terminal: control characters (ESC, BEL, CR, ... but not newline or tab) written as \xNN.
std::string terminal_safe(std::string_view s);

}  // namespace stalldx
