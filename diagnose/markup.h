// Internal: escaping text from traces and files (range names, device names, paths, verdict strings)
// before it goes into SVG or HTML. Every such string goes through here; nothing is trusted.
#pragma once

#include <string>
#include <string_view>

namespace stalldx::diagnose {

// & < > " ' as entities; control characters other than tab/newline dropped.
std::string xml_escape(std::string_view text);

// The shared chrome of stalldx's HTML pages: doctype, <head> with the title (escaped) and the one
// stylesheet, <body>; and its end with an optional inline script. No network.
std::string html_page_begin(std::string_view title);
std::string html_page_end(std::string_view script = {});

}  // namespace stalldx::diagnose
