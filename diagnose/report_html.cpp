// One self-contained HTML page per diagnosis: verdicts and advice first, the per-step chart (the SVG of
// report_svg, bucketed so any step count reads), the step table with a verdict filter, the largest stall's
// evidence with trace timestamps, coverage, the summaries. No network: the CSS and the one small script
// are inline. Every text from a trace goes through xml_escape.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <set>

#include <nlohmann/json.hpp>

#include "markup.h"
#include "stalldx/diagnose/diagnosis.h"

namespace stalldx::diagnose {

namespace {



// The step table is built from the embedded rows (JSON), one page of 200 matching rows at a time: a
// 10,000-step report keeps a small DOM. textContent only (no markup from data). Marks the page ready
// (tests look for data-ready and data-rendered; data-ready-ms is the time from navigation to ready).
constexpr const char* kScript = R"JS(
(function(){var rows=JSON.parse(document.getElementById('rows').textContent),sel=document.getElementById('verdict-filter'),
body=document.querySelector('#steps tbody'),shown=document.getElementById('shown'),more=document.getElementById('more'),page=200,list=[],upto=0;
function cell(tr,text,left,title){var td=document.createElement('td');td.textContent=text;if(left)td.className='l';if(title)td.title=title;tr.appendChild(td);}
function render(){var end=Math.min(list.length,upto+page);for(var i=upto;i<end;i++){var r=list[i],tr=document.createElement('tr');if(r.w)tr.className='warmup';
cell(tr,r.s);cell(tr,r.win.toFixed(2));cell(tr,r.b.toFixed(3)+'–'+r.e.toFixed(3));cell(tr,r.busy.toFixed(2));cell(tr,r.stall.toFixed(2));
cell(tr,r.v+(r.w?' (warm-up)':''),true);for(var k=0;k<4;k++)cell(tr,r.p[k].toFixed(0));cell(tr,r.ev,true,r.next);body.appendChild(tr);}
upto=end;body.setAttribute('data-rendered',upto);more.style.display=upto<list.length?'':'none';}
function apply(){var v=sel.value;list=rows.filter(function(r){return v===''||r.v===v;});shown.textContent=list.length;body.textContent='';upto=0;render();}
sel.addEventListener('change',apply);more.addEventListener('click',render);apply();
document.body.setAttribute('data-ready-ms',performance.now().toFixed(0));document.body.setAttribute('data-ready','1');})();
)JS";

// JSON inside <script type="application/json">: '<' '>' '&' as \u escapes, so no text can close the element.
std::string script_safe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

std::string esc(std::string_view s) { return xml_escape(s); }

void summary_table(std::string& out, const char* title, const std::vector<SummaryRow>& rows, std::size_t limit) {
  if (rows.empty()) return;
  auto o = std::back_inserter(out);
  fmt::format_to(o, "<h3>{}</h3><div class=\"scroll\" style=\"max-height:320px\"><table><thead><tr><th class=\"l\">group</th><th class=\"l\">name</th>"
                    "<th>count</th><th>total ms</th><th>mean ms</th><th>p95 ms</th><th>max ms</th></tr></thead><tbody>\n", title);
  for (std::size_t i = 0; i < rows.size() && i < limit; ++i) {
    const SummaryRow& r = rows[i];
    fmt::format_to(o, "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{:.3f}</td><td>{:.3f}</td><td>{:.3f}</td><td>{:.3f}</td></tr>\n",
                   esc(r.group), esc(r.name), r.count, r.total_ms, r.mean_ms, r.p95_ms, r.max_ms);
  }
  out += "</tbody></table></div>\n";
}

// The verdict, the stall by class, the advice: first on the page.
void verdict_section(std::string& out, const Report& rep) {
  auto o = std::back_inserter(out);
  const bool standin = rep.coverage.standin;
  const RunSummary& s = rep.summary;
  fmt::format_to(o, "<section id=\"summary\"><h2>Verdict</h2><p id=\"headline\"><strong>{}</strong></p><div>", esc(s.headline.text));
  for (const auto& [v, n] : s.verdict_counts) fmt::format_to(o, "<span class=\"chip {0}\">{0}: {1}</span>", esc(verdict_name(v, standin)), n);
  fmt::format_to(o, "</div><p>{} steady-state steps ({} warm-up reported apart); stall {:.1f} ms of {:.1f} ms windows, device busy {:.1f} ms.</p>\n",
                 s.steady_steps, s.warmup_steps, s.steady_stall_ms, s.steady_window_ms, s.steady_busy_ms);
  if (s.steady_stall_ms > 0) {
    const char* colours[] = {"#d62728", "#ff7f0e", "#9467bd", "#7f7f7f"};
    out += "<div class=\"bar\" title=\"stall by class\">";
    for (int k = 0; k < kClassCount; ++k) {
      const double share = s.stall_ms[static_cast<std::size_t>(k)] / s.steady_stall_ms;
      if (share > 0)
        fmt::format_to(o, "<span style=\"width:{:.2f}%;background:{}\" title=\"{}: {:.1f} ms\"></span>", 100 * share, colours[k],
                       class_name(static_cast<StallClass>(k)), s.stall_ms[static_cast<std::size_t>(k)]);
    }
    out += "</div><p class=\"muted\">stall by class: ";
    for (int k = 0; k < kClassCount; ++k)
      fmt::format_to(o, "{}{} {:.1f} ms", k ? " · " : "", class_name(static_cast<StallClass>(k)), s.stall_ms[static_cast<std::size_t>(k)]);
    out += "</p>\n";
  }
  out += "<h3>Advice</h3><ul class=\"advice\" id=\"advice\">";
  if (s.advice.empty()) out += "<li class=\"muted\">none: nothing in these records calls for a change</li>";
  for (const Advised& a : s.advice) fmt::format_to(o, "<li>{}</li>", esc(a.text));
  out += "</ul></section>\n";
}

// What was recorded and how far to trust it.
void coverage_section(std::string& out, const Report& rep) {
  auto o = std::back_inserter(out);
  const bool standin = rep.coverage.standin;
  const Coverage& c = rep.coverage;
  fmt::format_to(o, "<section id=\"coverage\"><h2>Coverage</h2><p>host {} · CPU time {} · NVTX {} · CUPTI {} · device records {} · dropped host {} / device {} · "
                    "device records with no step {}{}</p><p>confidence: <b>{}</b></p>",
                 c.host ? "on" : "off", c.cpu_time ? "on" : "off", c.nvtx ? "on" : "off", c.cupti ? "on" : "off",
                 c.device_records ? (standin ? "host stand-in" : "yes") : "NONE", c.dropped_host, c.dropped_device, c.unmatched_device,
                 c.interrupted ? " · the run was interrupted" : "", esc(confidence_text(c)));
  if (!c.notes.empty()) {
    out += "<ul>";
    for (const std::string& n : c.notes) fmt::format_to(o, "<li>{}</li>", esc(n));
    out += "</ul>";
  }
  out += "</section>\n";
}

// The largest steady stall, with its evidence and where to look in the trace.
void largest_stall_section(std::string& out, const Report& rep) {
  auto o = std::back_inserter(out);
  const StepDiagnosis* worst = nullptr;
  for (const StepDiagnosis& st : rep.steps)
    if (!st.warmup && (worst == nullptr || st.stall_ms > worst->stall_ms)) worst = &st;
  if (worst != nullptr) {
    fmt::format_to(o, "<section id=\"largest\"><h2>Largest steady-state stall: step {}</h2><p>{:.3f}–{:.3f} ms in the trace (as Perfetto shows "
                      "times: from the trace's start). {}</p><pre>",
                   worst->step, worst->window_begin_ms, worst->window_end_ms, esc(worst->evidence));
    for (const std::string& d : worst->details) fmt::format_to(o, "{}\n", esc(d));
    fmt::format_to(o, "</pre><p><b>next:</b> {}</p><p class=\"muted\">In Perfetto (ui.perfetto.dev, open the trace): press <kbd>/</kbd>, "
                      "search the step's range, or drag over {:.3f}–{:.3f} ms; the device lanes' gaps are the stall, the consumer's slices "
                      "at those times are where it went.</p></section>\n",
                   esc(worst->next_question), worst->window_begin_ms, worst->window_end_ms);
  }
}

// Every step, filterable by verdict (rows as JSON, drawn by kScript).
void steps_section(std::string& out, const Report& rep) {
  auto o = std::back_inserter(out);
  const bool standin = rep.coverage.standin;
  std::set<std::string> verdicts;
  for (const StepDiagnosis& st : rep.steps) verdicts.insert(verdict_name(st.verdict, standin));
  out += "<section id=\"steps\"><h2>Steps</h2><p><label>verdict <select id=\"verdict-filter\"><option value=\"\">all</option>";
  for (const std::string& v : verdicts) fmt::format_to(o, "<option value=\"{0}\">{0}</option>", esc(v));
  fmt::format_to(o, "</select></label> <span class=\"muted\"><span id=\"shown\">{}</span> of {} steps shown</span></p>\n", rep.steps.size(), rep.steps.size());
  out += "<div class=\"scroll\"><table><thead><tr><th>step</th><th>window ms</th><th>in the trace (ms)</th><th>busy ms</th><th>stall ms</th>"
         "<th class=\"l\">verdict</th><th>ret%</th><th>dec%</th><th>sub%</th><th>un%</th><th class=\"l\">evidence</th></tr></thead><tbody></tbody>"
         "</table></div><p><button id=\"more\" type=\"button\">show 200 more</button></p></section>\n";
  nlohmann::json rows = nlohmann::json::array();
  for (const StepDiagnosis& st : rep.steps) {
    nlohmann::json pct = nlohmann::json::array();
    for (int k = 0; k < kClassCount; ++k) pct.push_back(st.stall_ms > 0 ? 100 * st.class_ms[static_cast<std::size_t>(k)] / st.stall_ms : 0.0);
    rows.push_back({{"s", st.step}, {"w", st.warmup}, {"win", st.window_ms}, {"b", st.window_begin_ms}, {"e", st.window_end_ms},
                    {"busy", st.busy_ms}, {"stall", st.stall_ms}, {"v", verdict_name(st.verdict, standin)}, {"p", pct},
                    {"ev", st.evidence}, {"next", st.next_question}});
  }
  fmt::format_to(o, "<script type=\"application/json\" id=\"rows\">{}</script>\n",
                 script_safe(rows.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
}

// The summary tables and the copies' bandwidth.
void summaries_section(std::string& out, const Report& rep) {
  auto o = std::back_inserter(out);
  out += "<section id=\"summaries\"><h2>Summaries</h2>";
  summary_table(out, "host ranges by role and name", rep.host_summary, 50);
  summary_table(out, "CUDA API calls", rep.api_summary, 50);
  summary_table(out, "device work", rep.device_summary, 50);
  if (!rep.bandwidth.empty()) {
    out += "<h3>copies</h3><table><thead><tr><th class=\"l\">kind</th><th>copies</th><th>MB</th><th>ms</th><th>GB/s</th></tr></thead><tbody>";
    for (const BandwidthRow& b : rep.bandwidth)
      fmt::format_to(o, "<tr><td class=\"l\">{}</td><td>{}</td><td>{:.1f}</td><td>{:.3f}</td><td>{:.1f}</td></tr>", esc(b.kind), b.copies, b.bytes / 1e6,
                     b.total_ms, b.gbps);
    out += "</tbody></table>";
  }
  fmt::format_to(o, "<p class=\"muted\">device busy (union over streams) {:.3f} ms; plain sum of activity durations {:.3f} ms</p></section>\n",
                 rep.device_busy_union_ms, rep.device_busy_sum_ms);
}

}  // namespace

std::string report_html(const Report& rep, const std::string& source) {
  std::string out;
  out.reserve(4096 + rep.steps.size() * 420);
  out += html_page_begin("stalldx — " + source);
  fmt::format_to(std::back_inserter(out), "<header><h1>stalldx diagnosis</h1><div class=\"muted\">{} · device: {}</div></header>\n", esc(source),
                 esc(rep.coverage.standin ? "host stand-in (no device)" : rep.device));
  verdict_section(out, rep);
  coverage_section(out, rep);
  out += "<section id=\"chart\"><h2>Per step</h2>\n";
  out += report_svg(rep);
  out += "<p class=\"muted\">Hover a bar for its numbers. Times are ms; a bar is one step, or the mean of consecutive steps when there are "
         "more steps than fit.</p></section>\n";
  largest_stall_section(out, rep);
  steps_section(out, rep);
  summaries_section(out, rep);
  out += html_page_end(kScript);
  return out;
}

}  // namespace stalldx::diagnose
