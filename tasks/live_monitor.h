// Internal to tasks/record.cpp: `record --live` / `--live-json`. A thread that, every interval while CMD
// runs, merges a host-only snapshot of the parts written so far (ranges that ended in the last interval
// and a margin before it) and reports one diagnose::LiveLine. Memory stays flat: each snapshot is dropped
// after its line. Wakes at once on stop().
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "stalldx/tasks/record.h"

namespace stalldx::tasks {

class LiveMonitor {
 public:
  // Nothing runs unless options.live_s > 0. `live_json` is opened for appending (created if absent).
  LiveMonitor(const RecordOptions& options, std::string parts_dir);
  ~LiveMonitor();
  LiveMonitor(const LiveMonitor&) = delete;
  LiveMonitor& operator=(const LiveMonitor&) = delete;
  void stop();
  int lines() const { return lines_; }
  // --live-json lines that could not be written (the file not opened, a full disk), and why (the first).
  int json_lost() const { return json_lost_; }
  const std::string& json_error() const { return json_error_; }

 private:
  void loop();
  void one_line(std::int64_t since_ns, std::int64_t now_ns);

  const RecordOptions& o_;
  std::string dir_;
  std::int64_t started_ns_ = 0;
  std::FILE* json_ = nullptr;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  int lines_ = 0;
  int json_lost_ = 0;
  std::string json_error_;
  std::int64_t next_step_ = 0;  // steps reported so far: the next line's first step
  std::thread thread_;
};

}  // namespace stalldx::tasks
