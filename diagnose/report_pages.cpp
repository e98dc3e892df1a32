// The HTML pages of a sweep (the recommendation, the img/s heatmap, every point) and of an evaluation
// (per-scenario accuracy, the confusion matrix, the missed steps). Same chrome as the diagnosis page;
// every text escaped (verdict mixes and misses carry trace text).
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <set>

#include "markup.h"
#include "stalldx/diagnose/evaluation.h"
#include "stalldx/diagnose/sweep_analysis.h"

namespace stalldx::diagnose {

std::string sweep_html(const std::vector<SweepPoint>& points, const Recommendation& r, const std::vector<Prediction>& predicted, int profiled_workers) {
  std::string out = html_page_begin("stalldx sweep");
  auto o = std::back_inserter(out);
  fmt::format_to(o, "<header><h1>stalldx sweep</h1><div class=\"muted\">{} settings, workers × prefetch, img/s measured unprofiled "
                    "(median of repeats), verdicts from one profiled run each</div></header>\n",
                 points.size());
  fmt::format_to(o, "<section id=\"summary\"><h2>Recommendation</h2><p>{}</p></section>\n", xml_escape(r.text));
  out += "<section id=\"chart\"><h2>img/s by setting</h2>\n" + sweep_svg(points, r) + "</section>\n";
  out += "<section id=\"points\"><h2>Every setting</h2><div class=\"scroll\"><table><thead><tr><th>workers</th><th>prefetch</th><th>img/s</th>"
         "<th class=\"l\">repeats</th><th>step p50 ms</th><th>step p95 ms</th><th class=\"l\">verdicts (profiled)</th><th>ret ms</th><th>dec ms</th>"
         "<th>sub ms</th><th>un ms</th></tr></thead><tbody>\n";
  for (const SweepPoint& p : points) {
    std::string reps;
    for (double v : p.repeats) reps += fmt::format("{}{:.0f}", reps.empty() ? "" : " ", v);
    const bool mark = &p == r.chosen;
    fmt::format_to(o, "<tr{}><td>{}</td><td>{}</td><td>{:.0f}</td><td class=\"l\">{}</td><td>{:.2f}</td><td>{:.2f}</td><td class=\"l\">{}</td>"
                      "<td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td></tr>\n",
                   mark ? " style=\"font-weight:600;background:#eef8ee\"" : "", p.workers, p.prefetch, p.images_per_second, reps, p.step_p50,
                   p.step_p95, p.dominant_name(), p.stall_retrieval, p.stall_decoding, p.stall_submission, p.stall_unattributed);
  }
  out += "</tbody></table></div></section>\n";
  if (!predicted.empty()) {
    fmt::format_to(o, "<section id=\"whatif\"><h2>What-if: predicted against measured</h2><p class=\"muted\">Predicted from the stage costs of "
                      "the profiled run at {} workers (diagnose --what-if); measured: the best prefetch at each worker count.</p>"
                      "<table><thead><tr><th>workers</th><th>predicted img/s</th><th class=\"l\">bound</th><th>measured img/s</th><th>error</th></tr>"
                      "</thead><tbody>\n",
                   profiled_workers);
    for (const Prediction& pr : predicted) {
      double measured = 0;
      for (const SweepPoint& p : points)
        if (p.workers == pr.workers) measured = std::max(measured, p.images_per_second);
      fmt::format_to(o, "<tr><td>{}</td><td>{:.0f}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td></tr>\n", pr.workers, pr.images_per_second,
                     xml_escape(pr.bound), measured > 0 ? fmt::format("{:.0f}", measured) : "—",
                     measured > 0 ? fmt::format("{:+.1f}%", 100 * (pr.images_per_second - measured) / measured) : "—");
    }
    out += "</tbody></table></section>\n";
  }
  return out + html_page_end("document.body.setAttribute('data-ready','1');");
}

std::string eval_html(const std::vector<ScenarioScore>& scores) {
  std::string out = html_page_begin("stalldx eval");
  auto o = std::back_inserter(out);
  int steady = 0, correct = 0;
  for (const ScenarioScore& s : scores) {
    steady += s.steady;
    correct += s.correct;
  }
  fmt::format_to(o, "<header><h1>stalldx eval</h1><div class=\"muted\">{} scenarios, {} of {} steady-state steps got the induced verdict</div>"
                    "</header>\n",
                 scores.size(), correct, steady);
  out += "<section id=\"summary\"><h2>Per scenario</h2><table><thead><tr><th class=\"l\">scenario</th><th class=\"l\">expected</th><th>steps</th>"
         "<th>accuracy</th></tr></thead><tbody>\n";
  for (const ScenarioScore& s : scores)
    fmt::format_to(o, "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td style=\"background:{}\">{:.0f}%</td></tr>\n", xml_escape(s.name),
                   xml_escape(s.expected), s.steady, s.accuracy >= 0.95 ? "#d7f0d7" : "#fbd5d5", 100 * s.accuracy);
  out += "</tbody></table></section>\n";
  // The confusion matrix over every scenario: rows induced, columns verdicts.
  std::set<std::string> induced, got;  // by name (device-bound spelled one way), as the matrix lists them
  std::map<std::pair<std::string, std::string>, int> cells;
  for (const ScenarioScore& s : scores)
    for (const auto& [k, n] : s.cells) {
      const std::pair<std::string, std::string> key{verdict_name(k.first, false), verdict_name(k.second, false)};
      induced.insert(key.first);
      got.insert(key.second);
      cells[key] += n;
    }
  out += "<section id=\"confusion\"><h2>Confusion matrix (steady-state steps)</h2><table><thead><tr><th class=\"l\">induced \\ got</th>";
  for (const std::string& g : got) fmt::format_to(o, "<th>{}</th>", xml_escape(g));
  out += "</tr></thead><tbody>\n";
  for (const std::string& i : induced) {
    fmt::format_to(o, "<tr><td class=\"l\">{}</td>", xml_escape(i));
    for (const std::string& g : got) {
      const int n = cells.count({i, g}) ? cells[{i, g}] : 0;
      fmt::format_to(o, "<td{}>{}</td>", n > 0 && i == g ? " style=\"background:#d7f0d7\"" : n > 0 ? " style=\"background:#fbd5d5\"" : "", n);
    }
    out += "</tr>\n";
  }
  out += "</tbody></table></section>\n<section id=\"misses\"><h2>Missed steps</h2>";
  bool any = false;
  for (const ScenarioScore& s : scores) {
    if (s.misses.empty()) continue;
    any = true;
    fmt::format_to(o, "<h3>{}</h3><pre>", xml_escape(s.name));
    for (const std::string& m : s.misses) fmt::format_to(o, "{}\n", xml_escape(m));
    out += "</pre>";
  }
  if (!any) out += "<p class=\"muted\">none</p>";
  out += "</section>\n";
  return out + html_page_end("document.body.setAttribute('data-ready','1');");
}

}  // namespace stalldx::diagnose
