// Batch slots: allocated once by a SlotAllocator (pageable or, from the CUDA stage, pinned), filled in
// place by the workers, handed to the consumer in batch order, and recycled only once the consumer's
// release fence (e.g. "the H2D copy that reads this slot has completed") has passed.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "stalldx/status.h"

namespace stalldx::pipeline {

class SlotAllocator {
 public:
  virtual ~SlotAllocator() = default;
  virtual void* allocate(std::size_t bytes) = 0;  // nullptr on failure
  virtual void release(void* p, std::size_t bytes) noexcept = 0;
  virtual const char* kind() const = 0;           // "pageable", "pinned"
};
// Page-aligned pageable memory (touched once so the first batch does not pay the page faults).
std::unique_ptr<SlotAllocator> make_pageable_allocator();

struct BatchSlot {
  int id = 0;
  std::uint8_t* data = nullptr;      // owned by the pool; sample i at data + i * sample_bytes
  std::size_t bytes = 0;
  std::int64_t batch = -1;           // batch id this slot currently holds
  std::vector<std::uint32_t> indices;  // dataset index per sample (after bad-sample substitution)
  std::vector<std::int32_t> labels;
  std::atomic<int> not_own{0};       // samples not from their own file (substituted or zero); bad path only
};

class BatchPool {
 public:
  // Allocates `count` slots of `bytes` each up front; fails with a clear message if memory is short.
  static Status create(int count, std::size_t bytes, SlotAllocator& allocator, std::unique_ptr<BatchPool>& out);
  ~BatchPool();

  // Producer side. Blocks until a slot is free (waiting out its release fence); nullptr after close().
  BatchSlot* acquire_free();
  // The slot now holds finished batch `slot->batch`.
  void mark_ready(BatchSlot* slot);

  // Consumer side. Blocks until batch `batch` is ready; nullptr after close() or once `stop` (may be
  // null) reads true — seen within 20 ms.
  BatchSlot* wait_ready(std::int64_t batch, const std::atomic<bool>* stop = nullptr);
  // Gives the slot back; `fence` (may be empty) must return only when nothing reads the slot any more.
  void release(BatchSlot* slot, std::function<void()> fence);

  void close();                       // wakes every waiter; acquire/wait return nullptr from now on
  int size() const { return static_cast<int>(slots_.size()); }
  const std::vector<std::unique_ptr<BatchSlot>>& slots() const { return slots_; }

 private:
  BatchPool() = default;
  struct Releasing { BatchSlot* slot; std::function<void()> fence; };
  mutable std::mutex mu_;
  std::condition_variable free_cv_, ready_cv_;
  std::vector<std::unique_ptr<BatchSlot>> slots_;
  std::deque<BatchSlot*> free_;
  std::deque<Releasing> releasing_;
  std::vector<BatchSlot*> ready_;
  bool closed_ = false;
  SlotAllocator* allocator_ = nullptr;
};

}  // namespace stalldx::pipeline
