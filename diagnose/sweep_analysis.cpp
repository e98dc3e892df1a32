#include "stalldx/diagnose/sweep_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "markup.h"

namespace stalldx::diagnose {

Status validate_list(const std::vector<int>& v, const char* what) {
  if (v.empty()) return Status::invalid(fmt::format("--{} needs at least one value", what));
  std::set<int> seen;
  for (int x : v) {
    if (x <= 0) return Status::invalid(fmt::format("--{}: {} is not a positive count", what, x));
    if (!seen.insert(x).second) return Status::invalid(fmt::format("--{}: {} is listed twice", what, x));
  }
  return Status::ok();
}

Recommendation recommend(const std::vector<SweepPoint>& points, double tolerance) {
  Recommendation r;
  for (const SweepPoint& p : points)
    if (!r.best || p.images_per_second > r.best->images_per_second) r.best = &p;
  if (!r.best) {
    r.text = "no points measured";
    return r;
  }
  for (const SweepPoint& p : points) {
    if (p.images_per_second < (1 - tolerance) * r.best->images_per_second) continue;
    if (!r.chosen || p.workers < r.chosen->workers || (p.workers == r.chosen->workers && p.prefetch < r.chosen->prefetch)) r.chosen = &p;
  }
  // What limits the best: its verdict, and from which worker count on the device is the limit everywhere.
  std::string limit = fmt::format("the best point ({} workers, prefetch {}: {:.0f} img/s) is {}", r.best->workers, r.best->prefetch,
                                  r.best->images_per_second, r.best->dominant_name());
  std::set<int> workers;
  for (const SweepPoint& p : points) workers.insert(p.workers);
  int from = -1;
  for (auto it = workers.rbegin(); it != workers.rend(); ++it) {
    bool all = true;
    for (const SweepPoint& p : points)
      if (p.workers == *it && p.dominant != Verdict::device_bound) all = false;
    if (!all) break;
    from = *it;
  }
  if (from > 0)
    limit += fmt::format("; {} from {} workers on: more workers buy nothing", verdict_name(Verdict::device_bound, r.best->standin), from);
  r.text = fmt::format("use {} workers, prefetch {} ({:.0f} img/s, {:.1f}% of the best); {}", r.chosen->workers, r.chosen->prefetch,
                       r.chosen->images_per_second, 100 * r.chosen->images_per_second / r.best->images_per_second, limit);
  return r;
}

std::string sweep_table(const std::vector<SweepPoint>& points) {
  std::string out;
  auto o = std::back_inserter(out);
  fmt::format_to(o, "{:>7} {:>8} {:>9} {:>9} {:>9}  {:<16} {:>9} {:>9} {:>9} {:>9}\n", "workers", "prefetch", "img/s", "p50 ms",
                 "p95 ms", "dominant", "ret ms", "dec ms", "sub ms", "unattr ms");
  for (const SweepPoint& p : points)
    fmt::format_to(o, "{:>7} {:>8} {:>9.0f} {:>9.2f} {:>9.2f}  {:<16} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f}\n", p.workers, p.prefetch,
                   p.images_per_second, p.step_p50, p.step_p95, p.dominant_name(), p.stall_retrieval, p.stall_decoding, p.stall_submission,
                   p.stall_unattributed);
  return out;
}

std::string sweep_csv_header() {
  return "workers,prefetch,images_per_second,repeats,step_p50_ms,step_p95_ms,dominant,stall_retrieval_ms,stall_decoding_ms,"
         "stall_submission_ms,stall_unattributed_ms,verdicts\n";
}

std::string sweep_csv_row(const SweepPoint& p) {
  std::string reps;
  for (std::size_t i = 0; i < p.repeats.size(); ++i) reps += fmt::format("{}{:.1f}", i ? ";" : "", p.repeats[i]);
  std::string verdicts;
  for (auto& [v, n] : p.verdicts) verdicts += fmt::format("{}{}={}", verdicts.empty() ? "" : ";", verdict_name(v, p.standin), n);
  return fmt::format("{},{},{:.1f},{},{:.3f},{:.3f},{},{:.3f},{:.3f},{:.3f},{:.3f},{}\n", p.workers, p.prefetch, p.images_per_second, reps,
                     p.step_p50, p.step_p95, p.dominant ? verdict_name(*p.dominant, p.standin) : "none", p.stall_retrieval, p.stall_decoding,
                     p.stall_submission, p.stall_unattributed, verdicts);
}

namespace {
// A verdict's name from a CSV (read once, here): "none" or "undiagnosed" is no verdict, "consumer-bound"
// also marks the point's run as the stand-in's; anything else is not a sweep file's (the row is skipped).
void read_verdict_name(const std::string& name, SweepPoint& p, std::optional<Verdict>& out) {
  out.reset();
  if (name == "none" || name == "undiagnosed" || name.empty()) return;
  Verdict v;
  if (!verdict_from_name(name, v)) throw std::invalid_argument("verdict");
  if (name == verdict_name(Verdict::device_bound, true)) p.standin = true;
  out = v;
}
nlohmann::json verdict_counts_json(const SweepPoint& p) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [v, n] : p.verdicts) j[verdict_name(v, p.standin)] = n;
  return j;
}
}  // namespace

std::vector<SweepPoint> parse_sweep_csv(const std::string& text, int& skipped) {
  std::vector<SweepPoint> out;
  skipped = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line.rfind("workers,", 0) == 0) continue;
    std::vector<std::string> f;
    std::istringstream ls(line);
    for (std::string cell; std::getline(ls, cell, ',');) f.push_back(cell);
    try {
      if (f.size() == 11) f.emplace_back();  // a row with no verdicts
      if (f.size() != 12) throw std::invalid_argument("columns");
      SweepPoint p;
      p.workers = std::stoi(f[0]);
      p.prefetch = std::stoi(f[1]);
      p.images_per_second = std::stod(f[2]);
      std::istringstream rs(f[3]);
      for (std::string r; std::getline(rs, r, ';');) p.repeats.push_back(std::stod(r));
      p.step_p50 = std::stod(f[4]);
      p.step_p95 = std::stod(f[5]);
      read_verdict_name(f[6], p, p.dominant);
      p.stall_retrieval = std::stod(f[7]);
      p.stall_decoding = std::stod(f[8]);
      p.stall_submission = std::stod(f[9]);
      p.stall_unattributed = std::stod(f[10]);
      std::istringstream vs(f[11]);
      for (std::string kv; std::getline(vs, kv, ';');) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos) throw std::invalid_argument("verdicts");
        std::optional<Verdict> v;
        read_verdict_name(kv.substr(0, eq), p, v);
        if (!v) throw std::invalid_argument("verdicts");
        p.verdicts[*v] = std::stoi(kv.substr(eq + 1));
      }
      out.push_back(std::move(p));
    } catch (const std::exception&) {
      ++skipped;
    }
  }
  return out;
}

std::string sweep_json(const std::vector<SweepPoint>& points, const Recommendation& r) {
  nlohmann::json j;
  nlohmann::json arr = nlohmann::json::array();
  for (const SweepPoint& p : points)
    arr.push_back({{"workers", p.workers}, {"prefetch", p.prefetch}, {"images_per_second", p.images_per_second}, {"repeats", p.repeats},
                   {"step_p50_ms", p.step_p50}, {"step_p95_ms", p.step_p95}, {"dominant", p.dominant_name()}, {"verdicts", verdict_counts_json(p)},
                   {"stall_ms", {{"retrieval", p.stall_retrieval}, {"decoding", p.stall_decoding}, {"submission", p.stall_submission},
                                 {"unattributed", p.stall_unattributed}}}});
  j["points"] = arr;
  j["recommendation"] = r.text;
  if (r.chosen) j["recommended"] = {{"workers", r.chosen->workers}, {"prefetch", r.chosen->prefetch}};
  if (r.best) j["best"] = {{"workers", r.best->workers}, {"prefetch", r.best->prefetch}, {"images_per_second", r.best->images_per_second}};
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);  // names are untrusted bytes: invalid UTF-8 becomes U+FFFD
}

std::string sweep_svg(const std::vector<SweepPoint>& points, const Recommendation& r) {
  std::set<int> ws, ps;
  double best = 1;
  for (const SweepPoint& p : points) {
    ws.insert(p.workers);
    ps.insert(p.prefetch);
    best = std::max(best, p.images_per_second);
  }
  const std::vector<int> wv(ws.begin(), ws.end()), pv(ps.begin(), ps.end());
  const int cw = 90, ch = 44, left = 80, top = 50;
  std::string out;
  auto o = std::back_inserter(out);
  fmt::format_to(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"11\">\n",
                 left + cw * static_cast<int>(wv.size()) + 20, top + ch * static_cast<int>(pv.size()) + 70);
  fmt::format_to(o, "<text x=\"{}\" y=\"20\" font-size=\"14\">img/s by workers (columns) x prefetch (rows); dominant verdict per cell</text>\n", left);
  for (std::size_t i = 0; i < wv.size(); ++i)
    fmt::format_to(o, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{} w</text>\n", left + static_cast<int>(i) * cw + cw / 2, top - 6, wv[i]);
  for (std::size_t j = 0; j < pv.size(); ++j)
    fmt::format_to(o, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">prefetch {}</text>\n", left - 6, top + static_cast<int>(j) * ch + ch / 2 + 4, pv[j]);
  for (const SweepPoint& p : points) {
    const int i = static_cast<int>(std::find(wv.begin(), wv.end(), p.workers) - wv.begin());
    const int j = static_cast<int>(std::find(pv.begin(), pv.end(), p.prefetch) - pv.begin());
    const double f = p.images_per_second / best;  // white -> blue
    const int c = static_cast<int>(255 - 200 * f);
    const bool chosen = r.chosen == &p, top_cell = r.best == &p;
    fmt::format_to(o, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"rgb({},{},255)\" stroke=\"{}\" stroke-width=\"{}\"><title>{} workers, prefetch {}: {:.0f} img/s, {}</title></rect>\n",
                   left + i * cw, top + j * ch, cw - 2, ch - 2, c, c, chosen ? "#d62728" : top_cell ? "#000" : "#fff", chosen || top_cell ? 3 : 1,
                   p.workers, p.prefetch, p.images_per_second, p.dominant_name());
    fmt::format_to(o, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{}\">{:.0f}</text>\n", left + i * cw + cw / 2, top + j * ch + 18,
                   f > 0.6 ? "#fff" : "#000", p.images_per_second);
    fmt::format_to(o, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"9\" fill=\"{}\">{}</text>\n", left + i * cw + cw / 2,
                   top + j * ch + 32, f > 0.6 ? "#fff" : "#000", p.dominant_name());
  }
  fmt::format_to(o, "<text x=\"{}\" y=\"{}\">red frame: recommended; black frame: best. {}</text>\n", left,
                 top + ch * static_cast<int>(pv.size()) + 20, r.chosen ? fmt::format("{} workers, prefetch {}", r.chosen->workers, r.chosen->prefetch) : "");
  out += "</svg>\n";
  return out;
}

}  // namespace stalldx::diagnose
