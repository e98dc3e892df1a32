#include "stalldx/tasks/report_output.h"

#include <nlohmann/json.hpp>

#include "stalldx/output_file.h"
#include "stalldx/tasks/run_report.h"

namespace stalldx::tasks {

std::string report_stdout(const diagnose::Report& rep, const ReportForms& forms) {
  return forms.json ? diagnose::report_json(rep) + "\n" : diagnose::report_text(rep, forms.summaries);
}

Status write_report_files(const diagnose::Report& rep, const ReportForms& forms) {
  if (!forms.svg.empty())
    if (Status st = write_file_atomic(forms.svg, diagnose::report_svg(rep)); !st.is_ok()) return st;
  if (!forms.html.empty())
    if (Status st = write_file_atomic(forms.html, diagnose::report_html(rep, forms.source)); !st.is_ok()) return st;
  return Status::ok();
}

std::string run_stdout(const pipeline::RunResult& run, const diagnose::Report* rep, const ReportForms& forms) {
  if (forms.json) {
    nlohmann::json j = run_report_json(run);
    if (rep != nullptr) j["diagnosis"] = nlohmann::json::parse(diagnose::report_json(*rep));
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::string out = run_report_text(run);
  if (rep != nullptr) out += "\n" + diagnose::report_text(*rep, forms.summaries);
  return out;
}

std::string ranks_stdout(const RanksReport& ranks, const ReportForms& forms) {
  if (forms.json) return diagnose::cross_rank_json(ranks.report, ranks.standin) + "\n";
  std::string out;
  for (const std::string& l : ranks.rank_lines) out += l;
  return out + diagnose::cross_rank_text(ranks.report, ranks.standin);
}

Status write_ranks_files(const RanksReport& ranks, const ReportForms& forms) {
  if (!forms.svg.empty())
    if (Status st = write_file_atomic(forms.svg, diagnose::cross_rank_svg(ranks.report, ranks.standin)); !st.is_ok()) return st;
  if (!forms.html.empty())
    if (Status st = write_file_atomic(forms.html, diagnose::cross_rank_html(ranks.report, ranks.rank_lines, ranks.standin)); !st.is_ok())
      return st;
  return Status::ok();
}

}  // namespace stalldx::tasks
