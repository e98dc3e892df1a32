// The cross-rank chart (ranks.h: cross_rank_svg).
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>

#include "markup.h"
#include "stalldx/diagnose/ranks.h"
#include "step_buckets.h"

namespace stalldx::diagnose {

namespace {
const char* verdict_colour(Verdict v) {
  switch (v) {
    case Verdict::retrieval: return "#d62728";
    case Verdict::decoding: return "#ff7f0e";
    case Verdict::submission: return "#9467bd";
    case Verdict::device_bound: return "#2ca02c";
    case Verdict::input: return "#e377c2";
    default: return "#7f7f7f";
  }
}
struct Group {
  std::int64_t first = 0, last = 0;
  double wait_ms = 0;  // mean over the group's steps
  int straggler = -1;  // the most frequent straggler, -1 = mostly balanced
  Verdict verdict = Verdict::device_bound;
  bool never_arrived = false;
};
}  // namespace

std::string cross_rank_svg(const CrossRankReport& r, bool standin) {
  const int width = 960, left = 70, right = 20, top = 50, plot_h = 260, bottom = 90;
  const int plot_w = width - left - right;
  const std::size_t per = std::max<std::size_t>(1, (r.steps.size() * 4 + plot_w - 1) / plot_w);  // at least 4 px a bar
  std::vector<Group> groups;
  for (std::size_t i = 0; i < r.steps.size(); i += per) {
    Group g;
    std::map<int, int> count;
    std::map<int, Verdict> verdict;
    const std::size_t end = std::min(r.steps.size(), i + per);
    for (std::size_t k = i; k < end; ++k) {
      const CrossStep& c = r.steps[k];
      g.wait_ms += c.waited_ms / static_cast<double>(end - i);
      ++count[c.straggler];
      if (c.straggler >= 0) verdict[c.straggler] = c.straggler_verdict;
      g.never_arrived = g.never_arrived || c.never_arrived;
    }
    g.first = r.steps[i].step;
    g.last = r.steps[end - 1].step;
    g.straggler = std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) { return a.second < b.second; })->first;
    if (g.straggler >= 0) g.verdict = verdict[g.straggler];
    groups.push_back(g);
  }
  double max_ms = 0;
  for (const Group& g : groups) max_ms = std::max(max_ms, g.wait_ms);
  double axis_top = 1, tick = 1;
  nice_axis(max_ms, axis_top, tick);
  const double slot = groups.empty() ? plot_w : static_cast<double>(plot_w) / static_cast<double>(groups.size());
  const double bar = std::max(1.0, slot * 0.8);
  std::string out;
  auto o = std::back_inserter(out);
  fmt::format_to(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" font-family=\"sans-serif\" font-size=\"12\">\n",
                 width, top + plot_h + bottom, width, top + plot_h + bottom);
  fmt::format_to(o, "<text x=\"{}\" y=\"20\" font-size=\"15\">Per step: how long the other ranks waited in the all-reduce, and for whom</text>\n", left);
  fmt::format_to(o, "<text x=\"{}\" y=\"38\" fill=\"#555\">{} of {} ranks · run {} · {} steady steps{}{}</text>\n", left, r.ranks.size(), r.world_size,
                 xml_escape(r.run_id), r.steps.size(), per > 1 ? fmt::format(", {} per bar (mean wait, most frequent straggler)", per) : "",
                 r.run_straggler >= 0 ? fmt::format(" · straggler: rank {}", r.run_straggler) : " · no consistent straggler");
  for (double v = 0; v <= axis_top + tick / 2; v += tick) {
    const double y = top + plot_h - v / axis_top * plot_h;
    fmt::format_to(o, "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>\n",
                   left, y, left + plot_w, y, left - 6, y + 4, v);
  }
  fmt::format_to(o, "<text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">others' wait (ms)</text>\n", top + plot_h / 2,
                 top + plot_h / 2);
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const Group& g = groups[i];
    const double x = left + static_cast<double>(i) * slot + (slot - bar) / 2;
    const double h = axis_top > 0 ? g.wait_ms / axis_top * plot_h : 0;
    const std::string steps = g.first == g.last ? fmt::format("step {}", g.first) : fmt::format("steps {}–{}", g.first, g.last);
    const std::string who = g.straggler < 0 ? std::string("balanced")
                            : g.never_arrived ? fmt::format("rank {} never arrived", g.straggler)
                                              : fmt::format("for rank {} ({})", g.straggler, verdict_name(g.verdict, standin));
    fmt::format_to(o, "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"{}><title>{}: waited {:.2f} ms {}</title></rect>\n",
                   x, top + plot_h - h, bar, h, g.straggler < 0 ? "#c7c7c7" : verdict_colour(g.verdict), g.straggler < 0 ? " opacity=\"0.6\"" : "",
                   xml_escape(steps), g.wait_ms, xml_escape(who));
    if (g.straggler >= 0 && bar >= 10)
      fmt::format_to(o, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"10\">{}</text>\n", x + bar / 2, top + plot_h - h - 3,
                     g.straggler);
  }
  fmt::format_to(o, "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\"/>\n", left, top + plot_h, left + plot_w, top + plot_h);
  fmt::format_to(o, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">steady steps (label: the straggler's rank)</text>\n", left + plot_w / 2,
                 top + plot_h + 20);
  int lx = left;
  for (Verdict v : {Verdict::retrieval, Verdict::decoding, Verdict::submission, Verdict::device_bound, Verdict::input, Verdict::mixed}) {
    fmt::format_to(o, "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>\n", lx, top + plot_h + 40,
                   verdict_colour(v), lx + 16, top + plot_h + 50, xml_escape(verdict_name(v, standin)));
    lx += 130;
  }
  fmt::format_to(o, "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"#c7c7c7\" opacity=\"0.6\"/><text x=\"{}\" y=\"{}\">balanced</text>\n", left,
                 top + plot_h + 62, left + 16, top + plot_h + 72);
  out += "</svg>\n";
  return out;
}

}  // namespace stalldx::diagnose
