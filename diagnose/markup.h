// Internal: escaping text from traces and files (range names, device names, paths, verdict strings)
// before it goes into SVG or HTML. Every such string goes through here; nothing is trusted.
#pragma once

#include <string>
#include <string_view>

namespace stalldx::diagnose {

// & < > " ' as entities; control characters other than tab/newline dropped.
std::string xml_escape(std::string_view text);

}  // namespace stalldx::diagnose
