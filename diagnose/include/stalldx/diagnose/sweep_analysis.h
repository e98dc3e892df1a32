// Sweep results over worker x prefetch settings: validation of the lists, the recommendation rule, and
// the renderings (table, CSV, JSON, SVG heatmap). Pure data: the sweep command runs the points.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stalldx/diagnose/whatif.h"
#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/status.h"

namespace stalldx::diagnose {

struct SweepPoint {
  int workers = 0, prefetch = 0;
  double images_per_second = 0;            // median over the unprofiled repeats
  std::vector<double> repeats;             // each unprofiled run's img/s
  double step_p50 = 0, step_p95 = 0;       // of the median unprofiled run
  std::optional<Verdict> dominant;         // most frequent steady-state verdict of the profiled run (none: not diagnosed)
  bool standin = false;                    // the host stand-in played the device (device-bound reads consumer-bound)
  std::map<Verdict, int> verdicts;         // steady steps per verdict, profiled run
  std::string dominant_name() const { return dominant ? verdict_name(*dominant, standin) : "undiagnosed"; }
  double stall_retrieval = 0, stall_decoding = 0, stall_submission = 0, stall_unattributed = 0;  // ms, profiled run
};

// Non-empty, all > 0, no duplicates; `what` names the list in the message.
Status validate_list(const std::vector<int>& values, const char* what);

struct Recommendation {
  const SweepPoint* best = nullptr;
  const SweepPoint* chosen = nullptr;      // the smallest setting within `tolerance` of the best
  std::string text;
};
// Smallest = fewest workers, then least prefetch, among points within `tolerance` (0.05) of the best img/s.
Recommendation recommend(const std::vector<SweepPoint>& points, double tolerance = 0.05);

std::string sweep_table(const std::vector<SweepPoint>& points);
std::string sweep_csv_header();
std::string sweep_csv_row(const SweepPoint& p);
// Parses rows written by sweep_csv_row (for --resume); malformed rows are skipped and counted.
std::vector<SweepPoint> parse_sweep_csv(const std::string& text, int& skipped);
std::string sweep_json(const std::vector<SweepPoint>& points, const Recommendation& r);
std::string sweep_svg(const std::vector<SweepPoint>& points, const Recommendation& r);
// One self-contained HTML page: the recommendation, the heatmap, every setting, and — when `predicted`
// is given (the what-if model from one profiled run of `profiled_workers`) — predicted against measured
// img/s per worker count.
std::string sweep_html(const std::vector<SweepPoint>& points, const Recommendation& r, const std::vector<Prediction>& predicted = {},
                       int profiled_workers = 0);

}  // namespace stalldx::diagnose
