#include "stalldx/record/sampling.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <utility>

namespace stalldx::record {

namespace {
bool number(std::string_view s, std::int64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}
}  // namespace

bool SamplePlan::parse(std::string_view text, SamplePlan& out, std::string& error) {
  if (text == "auto") text = kAutoPlan;
  if (text == "on-demand") {
    out = SamplePlan{};
    out.on_demand = true;
    return true;
  }
  if (text == "full") {
    out = SamplePlan{};
    return true;
  }
  SamplePlan p;
  std::string_view rest = text;
  if (const auto plus = rest.find('+'); plus != std::string_view::npos) {
    if (!number(rest.substr(plus + 1), p.full) || p.full < 0) {
      error = fmt::format("{}: the number after '+' (full steps first) must be a whole number >= 0", text);
      return false;
    }
    rest = rest.substr(0, plus);
  }
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos || !number(rest.substr(0, slash), p.window) || !number(rest.substr(slash + 1), p.period)) {
    error = fmt::format("{}: expected K/N (K steps recorded in every N), K/N+F (after F full steps), 'auto' ({}), 'on-demand' or 'full'",
                        text, kAutoPlan);
    return false;
  }
  if (p.window < 1 || p.period < p.window || p.period > 1'000'000'000) {
    error = fmt::format("{}: K/N needs 1 <= K <= N", text);
    return false;
  }
  out = p;
  return true;
}

std::string SamplePlan::text() const {
  if (on_demand) return "on-demand";
  if (!samples()) return "full";
  return full > 0 ? fmt::format("{}/{}+{}", window, period, full) : fmt::format("{}/{}", window, period);
}

std::string SamplePlan::words() const {
  if (on_demand) return "on demand (stalldx capture)";
  if (!samples()) return "every step";
  const std::string w = fmt::format("{} step{} in every {}", window, window == 1 ? "" : "s", period);
  return full > 0 ? fmt::format("every step for the first {}, then {}", full, w) : w;
}

bool SamplePlan::records(std::int64_t index) const {
  if (on_demand) return false;
  if (!samples()) return true;
  if (index < 0) return full > 0;
  if (index < full) return true;
  return (index - full) % period < window;
}

WindowAction WindowScheduler::on_boundary(std::int64_t index) {
  bool want = plan_.records(index);
  if (capture_left_ > 0) {
    want = true;
    --capture_left_;
  }
  const bool releasing = std::exchange(draining_, false);
  if (want == on_) {
    if (!on_ && capture_left_ == 0 && plan_.records(index + 1)) return WindowAction::prepare;
    return releasing ? WindowAction::release : WindowAction::none;
  }
  on_ = want;
  draining_ = !want;
  return want ? WindowAction::attach : WindowAction::detach;
}

std::string plan_mark(const SamplePlan& plan) { return "plan\t" + plan.text() + "\n"; }

WindowMarks parse_window_marks(std::string_view text, std::int64_t pid, std::int64_t end_ns) {
  WindowMarks out;
  std::map<std::int64_t, std::size_t> open;  // window number -> index in out.windows
  while (!text.empty()) {
    const auto eol = text.find('\n');
    if (eol == std::string_view::npos) break;  // a line cut by a kill
    const std::string_view line = text.substr(0, eol);
    text = text.substr(eol + 1);
    std::vector<std::string_view> f;
    for (std::string_view rest = line;;) {
      const auto tab = rest.find('\t');
      f.push_back(rest.substr(0, tab));
      if (tab == std::string_view::npos) break;
      rest = rest.substr(tab + 1);
    }
    if (f.size() == 2 && f[0] == "plan") {
      SamplePlan p;
      std::string error;
      if (SamplePlan::parse(f[1], p, error)) out.plan = p;
      continue;
    }
    std::int64_t n = 0, ns = 0, step = -1;
    if (f.size() != 4 || !number(f[1], n) || !number(f[2], ns) || ns <= 0) continue;
    const bool edge = f[0] == "attach" || f[0] == "detach";
    // A step number as a run counts them (under 10^15, as step names' numbers): a forged one cannot
    // overflow the step ids made from it.
    if (edge && number(f[3], step) && step >= 0 && step < kMaxStepNumber) {
      out.stepped = true;
      out.steps.push_back({ns, step});
    }
    if (f[0] == "attach") {
      open[n] = out.windows.size();
      out.windows.push_back({n, DeviceWindow{ns, std::max(ns, end_ns), pid}});
    } else if (f[0] == "detach") {
      if (auto it = open.find(n); it != open.end()) {
        DeviceWindow& w = out.windows[it->second].second;
        w.end_ns = std::max(w.begin_ns, ns);
        open.erase(it);
      }
    }
  }
  return out;
}

void set_device_windows(TraceMeta& meta, const SamplePlan& plan, const std::vector<DeviceWindow>& windows) {
  meta.config[kSamplePlanKey] = plan.text();
  std::string s;
  for (const DeviceWindow& w : windows) s += fmt::format("{}{}:{}-{}", s.empty() ? "" : ",", w.pid, w.begin_ns, w.end_ns);
  meta.config[kWindowsKey] = s;
}

std::optional<std::vector<DeviceWindow>> device_windows(const TraceMeta& meta, std::size_t* bad) {
  const auto it = meta.config.find(kWindowsKey);
  if (it == meta.config.end()) return std::nullopt;
  std::vector<DeviceWindow> out;
  std::string_view rest = it->second;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const auto colon = item.find(':'), dash = item.find('-', colon == std::string_view::npos ? 0 : colon + 1);
    DeviceWindow w;
    if (colon == std::string_view::npos || dash == std::string_view::npos || !number(item.substr(0, colon), w.pid) ||
        !number(item.substr(colon + 1, dash - colon - 1), w.begin_ns) || !number(item.substr(dash + 1), w.end_ns) || w.end_ns < w.begin_ns) {
      if (bad != nullptr) ++*bad;
      continue;
    }
    out.push_back(w);
  }
  std::sort(out.begin(), out.end(), [](const DeviceWindow& a, const DeviceWindow& b) { return a.begin_ns < b.begin_ns; });
  return out;
}

}  // namespace stalldx::record
