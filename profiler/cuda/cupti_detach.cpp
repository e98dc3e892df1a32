// CUPTI's dynamic detach (CUPTI's "Dynamic Detach": cuptiFinalize from a callback's exit site). The
// request subscribes to the runtime and driver API domains; the first API exit after it calls
// cuptiFinalize, which also removes the subscriber. Between the request and that call every API call
// pays a callback; after it, none does. A collector starting before the finalize cancels the request.
#include <cupti.h>

#include <atomic>
#include <mutex>

#include "collectors.h"
#include "stalldx/cuda.h"

namespace stalldx::cuda {

namespace {

std::mutex g_mu;                     // the request's state; taken by the callback only while one is pending
std::atomic<bool> g_pending{false};
CUpti_SubscriberHandle g_subscriber = nullptr;
std::atomic<long> g_detaches{0};

void CUPTIAPI on_api(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (info == nullptr || info->callbackSite != CUPTI_API_EXIT || !g_pending.load(std::memory_order_acquire)) return;
  // Never waits: the request may still be enabling its domains (a CUPTI call, under CUPTI's own locks,
  // which this callback may hold): the next API exit finalizes instead.
  std::unique_lock<std::mutex> lock(g_mu, std::try_to_lock);
  if (!lock.owns_lock() || !g_pending.load(std::memory_order_relaxed)) return;
  g_pending.store(false, std::memory_order_release);
  g_subscriber = nullptr;  // cuptiFinalize removes every subscriber
  if (cuptiFinalize() == CUPTI_SUCCESS) g_detaches.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

void detach_cupti() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_pending.load(std::memory_order_relaxed)) return;
  if (g_subscriber == nullptr && cuptiSubscribe(&g_subscriber, reinterpret_cast<CUpti_CallbackFunc>(&on_api), nullptr) != CUPTI_SUCCESS) {
    g_subscriber = nullptr;
    return;  // another subscriber holds CUPTI (a tool of the program's own): stay attached, disabled
  }
  g_pending.store(true, std::memory_order_release);
  cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
}

void cancel_cupti_detach() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_pending.load(std::memory_order_relaxed)) return;
  g_pending.store(false, std::memory_order_release);
  if (g_subscriber != nullptr) cuptiUnsubscribe(g_subscriber);
  g_subscriber = nullptr;
}

long cupti_detaches() { return g_detaches.load(std::memory_order_relaxed); }

}  // namespace stalldx::cuda
