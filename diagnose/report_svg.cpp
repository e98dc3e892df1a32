// SVG chart: per step (or per bucket of steps when they do not fit) the device's busy time and the
// stall by class, stacked, in ms; warm-up shaded; axes labelled with units; a complete legend. Fixed
// width: nothing is clipped at any step count. Every text from the trace is escaped.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "markup.h"
#include "stalldx/diagnose/diagnosis.h"
#include "step_buckets.h"

namespace stalldx::diagnose {

namespace {
constexpr const char* kClassColours[kClassCount] = {"#d62728", "#ff7f0e", "#9467bd", "#7f7f7f"};
constexpr const char* kBusyColour = "#2ca02c";
}  // namespace

std::string report_svg(const Report& rep) {
  const int width = 960, left = 70, right = 20, top = 50, plot_h = 300, bottom = 80;
  const int plot_w = width - left - right;
  const std::vector<StepBucket> buckets = bucket_steps(rep.steps, plot_w / 4);  // at least 4 px a bar
  const int n = static_cast<int>(buckets.size());
  double max_ms = 0;
  for (const StepBucket& b : buckets) max_ms = std::max(max_ms, b.window_ms);
  double axis_top = 1, tick = 1;
  nice_axis(max_ms, axis_top, tick);
  const double slot = n > 0 ? static_cast<double>(plot_w) / n : plot_w;
  const double bar = std::max(1.0, slot * 0.8);
  std::string out;
  auto o = std::back_inserter(out);
  fmt::format_to(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" font-family=\"sans-serif\" font-size=\"12\">\n",
                 width, top + plot_h + bottom, width, top + plot_h + bottom);
  const int per = buckets.empty() ? 1 : buckets.front().steps;
  fmt::format_to(o, "<text x=\"{}\" y=\"20\" font-size=\"15\">Per-step device busy and stall by class</text>\n", left);
  fmt::format_to(o, "<text x=\"{}\" y=\"38\" fill=\"#555\">{} · {} steps{}</text>\n", left, xml_escape(rep.coverage.standin ? "host stand-in" : rep.device),
                 rep.steps.size(), per > 1 ? fmt::format(", {} per bar (means)", per) : "");
  // Y axis: ticks and gridlines, title with the unit.
  for (double v = 0; v <= axis_top + tick / 2; v += tick) {
    const double y = top + plot_h - v / axis_top * plot_h;
    fmt::format_to(o, "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>\n",
                   left, y, left + plot_w, y, left - 6, y + 4, v);
  }
  fmt::format_to(o, "<text transform=\"translate(16,{}) rotate(-90)\" text-anchor=\"middle\">time per step (ms)</text>\n", top + plot_h / 2);
  for (int i = 0; i < n; ++i) {
    const StepBucket& b = buckets[static_cast<std::size_t>(i)];
    const double x = left + i * slot + (slot - bar) / 2;
    const std::string label = b.steps > 1 ? fmt::format("steps {}–{}", b.first_step, b.last_step) : fmt::format("step {}", b.first_step);
    if (b.warmup)
      fmt::format_to(o, "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"#000\" fill-opacity=\"0.07\"><title>{} (warm-up)</title></rect>\n",
                     left + i * slot, top, slot, plot_h, label);
    double y = top + plot_h;
    auto seg = [&](double v, const char* colour, const char* what) {
      const double h = v / axis_top * plot_h;
      if (h <= 0) return;
      y -= h;
      fmt::format_to(o, "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}: {} {:.2f} ms of {:.2f} ms</title></rect>\n",
                     x, y, bar, h, colour, label, what, v, b.window_ms);
    };
    seg(b.busy_ms, kBusyColour, "device busy");
    for (int k = 0; k < kClassCount; ++k) seg(b.class_ms[static_cast<std::size_t>(k)], kClassColours[k], class_name(static_cast<StallClass>(k)));
  }
  // X axis: at most ~10 step labels, whatever the count.
  fmt::format_to(o, "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", left, top + plot_h, left + plot_w, top + plot_h);
  const int every = std::max(1, n / 10);
  for (int i = 0; i < n; i += every)
    fmt::format_to(o, "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + (i + 0.5) * slot, top + plot_h + 16,
                   buckets[static_cast<std::size_t>(i)].first_step);
  fmt::format_to(o, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">step</text>\n", left + plot_w / 2, top + plot_h + 34);
  // Legend: every series and the warm-up shade, on one row that fits the fixed width.
  struct Entry {
    const char* colour;
    std::string label;
    double opacity;
  };
  std::vector<Entry> legend{{kBusyColour, "device busy", 1}};
  for (int k = 0; k < kClassCount; ++k) legend.push_back({kClassColours[k], fmt::format("stall: {}", class_name(static_cast<StallClass>(k))), 1});
  legend.push_back({"#000", "warm-up", 0.07});
  int lx = left;
  for (const Entry& e : legend) {
    fmt::format_to(o, "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\" fill-opacity=\"{}\" stroke=\"#999\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
                   lx, top + plot_h + 50, e.colour, e.opacity, lx + 16, top + plot_h + 60, e.label);
    lx += 16 + static_cast<int>(e.label.size()) * 7 + 18;
  }
  out += "</svg>\n";
  return out;
}

}  // namespace stalldx::diagnose
