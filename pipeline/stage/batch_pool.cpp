#include "stalldx/stage/batch_pool.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <chrono>
#include <cstring>

#include "stalldx/profiler.h"

namespace stalldx::pipeline {

namespace {
class PageableAllocator final : public SlotAllocator {
 public:
  void* allocate(std::size_t bytes) override {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void* p = std::aligned_alloc(page, (bytes + page - 1) / page * page);
    if (p) std::memset(p, 0, bytes);
    return p;
  }
  void release(void* p, std::size_t) noexcept override { std::free(p); }
  const char* kind() const override { return "pageable"; }
};
}  // namespace

std::unique_ptr<SlotAllocator> make_pageable_allocator() { return std::make_unique<PageableAllocator>(); }

Status BatchPool::create(int count, std::size_t bytes, SlotAllocator& allocator, std::unique_ptr<BatchPool>& out) {
  if (count <= 0 || bytes == 0) return Status::invalid("batch pool needs at least one slot of non-zero size");
  std::unique_ptr<BatchPool> pool(new BatchPool());
  pool->allocator_ = &allocator;
  for (int i = 0; i < count; ++i) {
    auto s = std::make_unique<BatchSlot>();
    s->id = i;
    s->bytes = bytes;
    s->data = static_cast<std::uint8_t*>(allocator.allocate(bytes));
    if (s->data == nullptr)
      return Status::unavailable(fmt::format("cannot allocate {} {} batch slots of {:.1f} MB", count, allocator.kind(), bytes / 1e6));
    pool->free_.push_back(s.get());
    pool->slots_.push_back(std::move(s));
  }
  out = std::move(pool);
  return Status::ok();
}

BatchPool::~BatchPool() {
  for (auto& r : releasing_)
    if (r.fence) r.fence();
  for (auto& s : slots_)
    if (s->data) allocator_->release(s->data, s->bytes);
}

BatchSlot* BatchPool::acquire_free() {
  static const NameId kFree = register_name("free_slots");
  std::unique_lock<std::mutex> lock(mu_);
  free_cv_.wait(lock, [&] { return closed_ || !free_.empty() || !releasing_.empty(); });
  if (closed_) return nullptr;
  if (!free_.empty()) {
    BatchSlot* s = free_.front();
    free_.pop_front();
    counter(kFree, static_cast<double>(free_.size() + releasing_.size()));
    return s;
  }
  // Oldest released slot: wait out its fence (the copy reading it) without holding the lock.
  Releasing r = std::move(releasing_.front());
  releasing_.pop_front();
  counter(kFree, static_cast<double>(free_.size() + releasing_.size()));
  lock.unlock();
  if (r.fence) r.fence();
  return r.slot;
}

void BatchPool::mark_ready(BatchSlot* slot) {
  static const NameId kReady = register_name("ready_batches");
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.push_back(slot);
    counter(kReady, static_cast<double>(ready_.size()));
  }
  ready_cv_.notify_all();
}

BatchSlot* BatchPool::wait_ready(std::int64_t batch, const std::atomic<bool>* stop) {
  static const NameId kReady = register_name("ready_batches");
  std::unique_lock<std::mutex> lock(mu_);
  BatchSlot* found = nullptr;
  const auto ready = [&] {
    if (closed_ || (stop != nullptr && stop->load(std::memory_order_relaxed))) return true;
    for (auto it = ready_.begin(); it != ready_.end(); ++it)
      if ((*it)->batch == batch) { found = *it; ready_.erase(it); return true; }
    return false;
  };
  // A stop request is a plain flag (set from a signal handler, which cannot notify): poll it every 20 ms.
  while (!ready_cv_.wait_for(lock, std::chrono::milliseconds(20), ready)) {
  }
  if (found) counter(kReady, static_cast<double>(ready_.size()));
  return found;
}

void BatchPool::release(BatchSlot* slot, std::function<void()> fence) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (fence) releasing_.push_back({slot, std::move(fence)});
    else free_.push_back(slot);
  }
  free_cv_.notify_one();
}

void BatchPool::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  free_cv_.notify_all();
  ready_cv_.notify_all();
}

}  // namespace stalldx::pipeline
