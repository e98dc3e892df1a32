// SVG chart: one stacked bar per step — device busy, then stall by class — warm-up steps shaded.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "markup.h"
#include "stalldx/diagnose/diagnosis.h"

namespace stalldx::diagnose {

std::string report_svg(const Report& rep) {
  const int bar = 14, gap = 4, left = 60, top = 40, height = 300;
  const int n = static_cast<int>(rep.steps.size());
  const int width = left + std::max(1, n) * (bar + gap) + 200;
  double max_ms = 1;
  for (const StepDiagnosis& s : rep.steps) max_ms = std::max(max_ms, s.window_ms);
  const char* colours[] = {"#d62728", "#ff7f0e", "#9467bd", "#7f7f7f"};  // retrieval, decoding, submission, unattributed
  std::string out;
  auto o = std::back_inserter(out);
  fmt::format_to(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"11\">\n",
                 width, height + top + 60);
  fmt::format_to(o, "<text x=\"{}\" y=\"20\" font-size=\"14\">stalldx: per-step device busy and stall by class ({})</text>\n", left,
                 xml_escape(rep.coverage.standin ? "host stand-in" : rep.device));
  fmt::format_to(o, "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", left - 2, top, top + height);
  fmt::format_to(o, "<text x=\"5\" y=\"{}\">{:.0f} ms</text><text x=\"5\" y=\"{}\">0</text>\n", top + 10, max_ms, top + height);
  for (int i = 0; i < n; ++i) {
    const StepDiagnosis& s = rep.steps[static_cast<std::size_t>(i)];
    const int x = left + i * (bar + gap);
    double y = top + height;
    auto seg = [&](double v, const char* colour, const char* label) {
      const double h = v / max_ms * height;
      if (h <= 0) return;
      y -= h;
      fmt::format_to(o, "<rect x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"{}\"><title>step {} {} {:.2f} ms</title></rect>\n",
                     x, y, bar, h, colour, s.step, label, v);
    };
    seg(s.busy_ms, "#2ca02c", "busy");
    const char* labels[] = {"retrieval", "decoding", "submission", "unattributed"};
    for (int k = 0; k < kClassCount; ++k) seg(s.class_ms[static_cast<std::size_t>(k)], colours[k], labels[k]);
    if (s.warmup)
      fmt::format_to(o, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#000\" fill-opacity=\"0.08\"><title>warm-up</title></rect>\n",
                     x, top, bar, height);
    if (n <= 60 || i % 10 == 0) fmt::format_to(o, "<text x=\"{}\" y=\"{}\">{}</text>\n", x, top + height + 14, s.step);
  }
  const char* legend[] = {"busy", "retrieval", "decoding", "submission", "unattributed"};
  const char* lc[] = {"#2ca02c", colours[0], colours[1], colours[2], colours[3]};
  for (int k = 0; k < 5; ++k)
    fmt::format_to(o, "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
                   left + k * 100, top + height + 30, lc[k], left + k * 100 + 14, top + height + 39, legend[k]);
  out += "</svg>\n";
  return out;
}

}  // namespace stalldx::diagnose
