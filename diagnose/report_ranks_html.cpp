// The cross-rank page (ranks.h: cross_rank_html): the run's answer, notes, the per-step chart, the
// table by rank, every step that had a straggler, and each rank's own verdict counts. Every string
// from a trace (evidence, file and host names, run id) is escaped.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "markup.h"
#include "stalldx/diagnose/ranks.h"

namespace stalldx::diagnose {

namespace {
std::string rank_list(const std::vector<int>& v) {
  std::string s;
  for (int r : v) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s;
}
Verdict main_verdict(const RankRow& r) {
  return static_cast<Verdict>(std::max_element(r.verdicts_as_straggler.begin(), r.verdicts_as_straggler.end()) - r.verdicts_as_straggler.begin());
}
}  // namespace

std::string cross_rank_html(const CrossRankReport& r, const std::vector<std::string>& rank_lines, bool standin) {
  const auto esc = [](std::string_view s) { return xml_escape(s); };
  std::string out = html_page_begin(fmt::format("stalldx — {} ranks, run {}", r.world_size, r.run_id));
  auto o = std::back_inserter(out);
  fmt::format_to(o, "<header><h1>stalldx diagnosis across ranks</h1><div class=\"muted\">run {} · {} of {} ranks · {} steady steps</div></header>\n",
                 esc(r.run_id), r.ranks.size(), r.world_size, r.steps.size());
  out += "<section id=\"summary\"><h2>Verdict</h2><p>";
  const std::string answer = run_straggler_sentence(r, standin);
  fmt::format_to(o, "{}{}.", r.run_straggler >= 0 ? "<b>" + esc(answer.substr(0, answer.find(':'))) + "</b>" : esc(answer.substr(0, answer.find(':'))),
                 esc(answer.substr(answer.find(':'))));
  out += "</p>";
  if (!r.notes.empty()) {
    out += "<ul>";
    for (const std::string& n : r.notes) fmt::format_to(o, "<li>{}</li>", esc(n));
    out += "</ul>";
  }
  out += "</section>\n<section id=\"chart\"><h2>Per step: the others' wait in the all-reduce</h2>\n";
  out += cross_rank_svg(r, standin);
  out += "</section>\n<section id=\"ranks\"><h2>By rank</h2><table><thead><tr><th>rank</th><th>steady</th><th>straggler</th>"
         "<th>others waited ms</th><th class=\"l\">its verdict when straggling</th></tr></thead><tbody>\n";
  for (const RankRow& row : r.ranks)
    fmt::format_to(o, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1f}</td><td class=\"l\">{}{}</td></tr>\n", row.rank, row.steady_steps,
                   row.straggler_steps, row.waited_ms, row.straggler_steps ? esc(verdict_name(main_verdict(row), standin)) : "-",
                   row.interrupted ? " (run ended early)" : "");
  for (int m : r.missing) fmt::format_to(o, "<tr><td>{}</td><td colspan=\"4\" class=\"l muted\">no trace</td></tr>\n", m);
  out += "</tbody></table>";
  if (!rank_lines.empty()) {
    out += "<h3>Each rank's own verdicts</h3><pre>";
    for (const std::string& line : rank_lines) out += esc(line);
    out += "</pre>";
  }
  out += "</section>\n<section id=\"steps\"><h2>Steps with a straggler</h2><div class=\"scroll\"><table><thead><tr><th>step</th>"
         "<th>straggler</th><th>waited ms</th><th class=\"l\">waiting</th><th class=\"l\">its verdict</th><th class=\"l\">evidence</th>"
         "</tr></thead><tbody>\n";
  for (const CrossStep& c : r.steps) {
    if (c.straggler < 0) continue;
    fmt::format_to(o, "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>\n", c.step,
                   c.straggler, c.never_arrived ? std::string("never arrived") : fmt::format("{:.2f}", c.waited_ms), rank_list(c.waiting),
                   c.never_arrived ? "-" : esc(verdict_name(c.straggler_verdict, standin)), esc(c.straggler_evidence));
  }
  out += "</tbody></table></div></section>\n";
  out += html_page_end();
  return out;
}

}  // namespace stalldx::diagnose
