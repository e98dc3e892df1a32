// Internal: hands filled CUPTI activity buffers from CUPTI's buffer-completed callback to a converter
// thread of its own, so the callback returns at once. The thread runs at nice +10 (it yields CPU to the
// recorded program's threads) and converts in arrival order. Buffers are owned by the caller's convert
// function once handed to it.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace stalldx::cuda {

class BufferQueue {
 public:
  using Convert = std::function<void(std::uint8_t* buffer, std::size_t valid)>;

  // Starts the converter thread (no-op when it runs).
  void start(Convert convert) {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_) return;
    running_ = true;
    convert_ = std::move(convert);
    thread_ = std::thread([this] { run(); });
  }

  // Queues a buffer; false when no converter runs (the caller converts it itself).
  bool push(std::uint8_t* buffer, std::size_t valid) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return false;
    filled_.push_back({buffer, valid});
    cv_.notify_one();
    return true;
  }

  // Returns after every queued buffer was converted and the thread ended.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!running_) return;
      running_ = false;
      cv_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Filled {
    std::uint8_t* buffer;
    std::size_t valid;
  };

  void run() {
    setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);  // Linux: per thread; best effort
    for (;;) {
      Filled f{};
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !filled_.empty() || !running_; });
        if (filled_.empty()) return;  // told to stop and nothing is left
        f = filled_.front();
        filled_.pop_front();
      }
      convert_(f.buffer, f.valid);
    }
  }

  std::mutex mu_;  // filled_ and running_
  std::condition_variable cv_;
  std::deque<Filled> filled_;
  bool running_ = false;
  Convert convert_;
  std::thread thread_;
};

}  // namespace stalldx::cuda
