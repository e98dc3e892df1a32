#include "live_monitor.h"

#include <time.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "stalldx/diagnose/live.h"
#include "stalldx/clock.h"
#include "stalldx/record/merge.h"

namespace stalldx::tasks {

namespace {
// Ranges that ended this long before the interval are still read: a step that ends in the interval
// needs its inner ranges, and its batch's loader work, which may be seconds older (prefetch).
constexpr std::int64_t kMarginNs = 30'000'000'000;
}  // namespace

LiveMonitor::LiveMonitor(const RecordOptions& options, std::string parts_dir) : o_(options), dir_(std::move(parts_dir)) {
  if (o_.live_s <= 0) return;
  started_ns_ = monotonic_ns();
  if (!o_.live_json.empty() && (json_ = std::fopen(o_.live_json.c_str(), "ae")) == nullptr) json_error_ = std::strerror(errno);
  thread_ = std::thread([this] { loop(); });
}

LiveMonitor::~LiveMonitor() {
  stop();
  if (json_ != nullptr) std::fclose(json_);
}

void LiveMonitor::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LiveMonitor::loop() {
  std::int64_t since = started_ns_;
  const auto interval = std::chrono::duration<double>(o_.live_s);
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (wake_.wait_for(lock, interval, [this] { return stopping_; })) return;
    }
    const std::int64_t now = monotonic_ns();
    one_line(since, now);
    since = now;
  }
}

void LiveMonitor::one_line(std::int64_t since_ns, std::int64_t now_ns) {
  record::MergeOptions mo;
  mo.step = o_.step;
  mo.end_ns = now_ns;
  mo.since_ns = since_ns - kMarginNs;
  mo.host_only = true;
  Trace snapshot;
  record::MergeReport rep;
  if (!record::merge_parts(dir_, o_.roles, mo, snapshot, rep).is_ok()) return;
  const diagnose::LiveLine line = diagnose::live_line(snapshot, since_ns, now_ns, started_ns_, next_step_);
  next_step_ += line.steps;
  if (o_.live) o_.live(diagnose::live_text(line));
  if (json_ != nullptr) {
    const std::string j = diagnose::live_json(line) + "\n";
    if (std::fwrite(j.data(), 1, j.size(), json_) != j.size() || std::fflush(json_) != 0) {
      if (json_error_.empty()) json_error_ = std::strerror(errno);
      ++json_lost_;
      std::clearerr(json_);
    }
  } else if (!o_.live_json.empty()) {
    ++json_lost_;
  }
  ++lines_;
}

}  // namespace stalldx::tasks
