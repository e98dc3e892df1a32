#include "markup.h"

#include <string>

namespace stalldx::diagnose {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n') break;
        out.push_back(ch);
    }
  }
  return out;
}

namespace {
constexpr const char* kStyle = R"CSS(
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.muted{color:#666}.chip{display:inline-block;padding:2px 10px;border-radius:12px;margin:0 6px 6px 0;background:#eef;font-weight:600}
.chip.retrieval{background:#fbd5d5}.chip.decoding{background:#ffe3c4}.chip.submission{background:#e5dbf3}.chip.device-bound,.chip.consumer-bound{background:#d7f0d7}
.chip.mixed,.chip.unattributed,.chip.input{background:#e4e4e4}
ul.advice li{margin:4px 0}.bar{display:flex;height:14px;border-radius:3px;overflow:hidden;max-width:600px;background:#eee}
table{border-collapse:collapse;width:100%;font-size:12.5px}th,td{border-bottom:1px solid #eee;padding:3px 6px;text-align:right;vertical-align:top}
th{background:#f6f6f6;position:sticky;top:0}td.l,th.l{text-align:left}tr.warmup td{color:#888}
.scroll{max-height:560px;overflow:auto;border:1px solid #ddd}pre{background:#f8f8f8;padding:8px;overflow:auto;font-size:12px}
svg{max-width:100%;height:auto}
)CSS";
}  // namespace

std::string html_page_begin(std::string_view title) {
  return "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>" +
         xml_escape(title) + "</title><style>" + kStyle + "</style></head><body>\n";
}

std::string html_page_end(std::string_view script) {
  std::string out;
  if (!script.empty()) out += "<script>" + std::string(script) + "</script>\n";
  return out + "</body></html>\n";
}

}  // namespace stalldx::diagnose
