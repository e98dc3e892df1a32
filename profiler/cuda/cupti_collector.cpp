// CUPTI activity collection. The buffer-completed callback only queues the buffer; a converter thread of
// ours (niced, so it yields to the program's threads) turns records into plain trace structs. CUPTI asks
// for a fresh buffer on the thread that is launching work, so that request takes a lock no conversion
// holds: a launching thread never waits for records to be converted. Kernel and API names are converted
// once each (cached by CUPTI's shared name pointer / callback id), not per record. Timestamps come from
// stalldx::now_ns via CUPTI's timestamp callback, so host and device records share CLOCK_MONOTONIC.
// Buffers are recycled; records beyond a bound are dropped and counted with CUPTI's own drops.
#include <cupti.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <string_view>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "api_selection.h"
#include "buffer_queue.h"
#include "cupti_names.h"
#include "collectors.h"
#include "stalldx/cuda.h"
#include "stalldx/profiler.h"

namespace stalldx::cuda {

namespace {

constexpr std::size_t kBufferBytes = 8u << 20;
constexpr std::size_t kAlign = 8;
constexpr std::size_t kMaxRecords = 8u << 20;  // per session, all kinds together

std::uint64_t host_clock() { return static_cast<std::uint64_t>(now_ns()); }

const std::vector<CUpti_ActivityKind> kDeviceKinds = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                                      CUPTI_ACTIVITY_KIND_MEMSET};

// CUPTI's callbacks are process-wide, so the state is one instance; the session owns a handle to it.
class CuptiCollector {
 public:
  Status start(bool driver_api, bool driver_work, bool sync, bool every_call) {
    cancel_cupti_detach();  // a detach not yet done would finalize CUPTI under this session
    {
      std::lock_guard<std::mutex> lock(mu_);
      reset_locked();
    }
    queue_.start([this](std::uint8_t* buffer, std::size_t valid) { convert_buffer(buffer, valid); });
    // Any failure from here stops the converter again: a later start (the next window) starts afresh.
    if (Status st = register_callbacks(); !st.is_ok()) {
      queue_.stop();
      return st;
    }
    // The calls before the device work: a session that starts while the program runs (a sampled
    // window) never records a kernel whose launch it did not record.
    std::vector<CUpti_ActivityKind> kinds = {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_OVERHEAD};
    if (driver_api) kinds.push_back(CUPTI_ACTIVITY_KIND_DRIVER);
    if (sync) kinds.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    const auto enable = [&](const std::vector<CUpti_ActivityKind>& ks) -> Status {
      for (CUpti_ActivityKind k : ks)
        if (Status st = cupti_status(cuptiActivityEnable(k), fmt::format("activity enable (kind {})", static_cast<int>(k)).c_str()); !st.is_ok()) {
          disable_all();
          queue_.stop();
          return st;
        }
      return Status::ok();
    };
    if (Status st = enable(kinds); !st.is_ok()) return st;
    // The driver API's work calls alone, the DRIVER kind off: PyTorch makes thousands of driver state
    // queries a step (eager ResNet-50: ~2,200 cuDevicePrimaryCtxGetState). Example 2 on the H200
    // (2026-12-03): record/native median 0.94 over 9 pairs, against 0.90-0.91 with the whole kind, every
    // kernel still linked to its step. Where the ids cannot be turned on one by one: the kind, the
    // queries left out.
    driver_work_ids_ = !driver_api && driver_work && record_work_calls(CUPTI_CB_DOMAIN_DRIVER_API) > 0;
    if (!driver_api && driver_work && !driver_work_ids_) {
      driver_api = true;
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
    }
    if (!every_call) {
      skip_state_queries(CUPTI_CB_DOMAIN_RUNTIME_API);
      if (driver_api) skip_state_queries(CUPTI_CB_DOMAIN_DRIVER_API);
      // Event and stream queries that find work still pending are polls, not waits: no record for them.
      if (sync) cuptiActivityEnableAllSyncRecords(0);
    }
    if (Status st = enable(kDeviceKinds); !st.is_ok()) return st;
    running_ = true;
    return Status::ok();
  }

  // The callbacks once per CUPTI lifetime: again only after a detach finalized CUPTI (a window that
  // re-registers them while CUPTI may still deliver a buffer gains nothing). After a finalize, the first
  // of these calls initializes CUPTI again: the costly part of attaching, which prepare() does ahead.
  Status register_callbacks() {
    if (registered_for_ == cupti_detaches()) return Status::ok();
    if (Status st = cupti_status(cuptiActivityRegisterTimestampCallback(&host_clock), "timestamp callback"); !st.is_ok()) return st;
    if (Status st = cupti_status(cuptiActivityRegisterCallbacks(&on_request, &on_complete), "buffer callbacks"); !st.is_ok()) return st;
    registered_for_ = cupti_detaches();
    return Status::ok();
  }

  // Ahead of a start, on a thread of ours: a detach not yet done is called off (CUPTI stays), or CUPTI,
  // finalized, is initialized again with the callbacks registered. Records stay off. Not while running.
  void prepare() {
    if (running_) return;
    cancel_cupti_detach();
    (void)register_callbacks();  // a failure is met again, and reported, by start()
  }

  void stop_and_drain(Trace& t) {
    if (!running_) return;
    running_ = false;
    // The device work first (no kernel recorded after its launch call no longer is), then every buffer
    // completed (all are queued now), then the calls.
    for (CUpti_ActivityKind k : kDeviceKinds) cuptiActivityDisable(k);
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    disable_all();
    if (driver_work_ids_) record_work_calls(CUPTI_CB_DOMAIN_DRIVER_API, false);  // a later session starts clean
    driver_work_ids_ = false;
    queue_.stop();  // converts what is queued, then ends
    std::lock_guard<std::mutex> lock(mu_);
    // Lanes: CUPTI's threadId is matched against the host threads' tid, then their pthread id.
    std::unordered_map<std::uint32_t, std::uint32_t> lane_of;
    for (const ThreadInfo& th : t.threads) {
      lane_of.emplace(static_cast<std::uint32_t>(th.os_tid), th.id);
      lane_of.emplace(static_cast<std::uint32_t>(th.pthread_id), th.id);
    }
    auto lane = [&](std::uint32_t cupti_tid) {
      auto it = lane_of.find(cupti_tid);
      if (it != lane_of.end()) return it->second;
      const auto id = static_cast<std::uint32_t>(t.threads.size());
      t.threads.push_back(ThreadInfo{id, cupti_tid, "cuda-thread", 0});
      lane_of.emplace(cupti_tid, id);
      return id;
    };
    for (PendingCall& c : calls_) {
      auto s = step_of_.find(c.call.correlation);
      c.call.step = s == step_of_.end() ? -1 : s->second;
      c.call.thread = lane(c.cupti_tid);
      c.call.name = t.intern(names_[c.call.name]);
      t.calls.push_back(c.call);
    }
    for (DeviceActivity& a : activities_) {
      auto s = step_of_.find(a.correlation);
      a.step = s == step_of_.end() ? -1 : s->second;
      a.name = t.intern(names_[a.name]);
      if (a.step < 0 && is_device_work(a.kind)) t.meta.unmatched_device++;
      t.activities.push_back(a);
    }
    t.meta.dropped_device += dropped_;
    t.meta.cupti = true;
    reset_locked();
  }

  // Never destroyed: CUPTI may call back during exit, and a collector first used after an atexit
  // handler was registered (a sampled recording's first window) would otherwise be destroyed before
  // that handler stops it — its converter thread still running (std::terminate).
  static CuptiCollector& instance() {
    static CuptiCollector* c = new CuptiCollector;
    return *c;
  }

  static void push_step(std::int64_t step) noexcept {
    cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, static_cast<std::uint64_t>(step));
  }
  static void pop_step() noexcept {
    std::uint64_t id = 0;
    cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);
  }

 private:
  struct PendingCall {
    RuntimeCall call;  // name = index into names_ until drained
    std::uint32_t cupti_tid;
  };

  // Called on the thread that needs a buffer (often the one launching work): a short lock, never one a
  // conversion holds.
  static void CUPTIAPI on_request(uint8_t** buffer, size_t* size, size_t* max_records) {
    CuptiCollector& self = instance();
    *max_records = 0;
    {
      std::lock_guard<std::mutex> lock(self.free_mu_);
      if (!self.free_buffers_.empty()) {
        *buffer = self.free_buffers_.back();
        self.free_buffers_.pop_back();
        *size = kBufferBytes;
        return;
      }
    }
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
    *size = *buffer ? kBufferBytes : 0;
  }

  // Queues the buffer for the converter; converts it here only when no converter runs (never expected).
  static void CUPTIAPI on_complete(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
    CuptiCollector& self = instance();
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0) {
      std::lock_guard<std::mutex> lock(self.mu_);
      self.dropped_ += dropped;
    }
    if (!self.queue_.push(buffer, valid)) self.convert_buffer(buffer, valid);
  }

  void convert_buffer(std::uint8_t* buffer, std::size_t valid) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      CUpti_Activity* rec = nullptr;
      while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) convert_locked(rec);
    }
    std::lock_guard<std::mutex> lock(free_mu_);
    free_buffers_.push_back(buffer);  // recycled: memory stays bounded by the in-flight buffers
  }

  std::uint32_t name_index(const std::string& n) { return names_.intern(n); }

  // CUPTI shares one name string among the records of a kernel; the pointer keys the cache and the
  // kept mangled text guards against a pointer reused after a module unload.
  std::uint32_t kernel_name_index(const char* mangled) {
    if (mangled == nullptr) return name_index("?");
    auto it = kernel_names_.find(mangled);
    if (it != kernel_names_.end() && it->second.first == mangled) return it->second.second;
    const std::uint32_t id = name_index(demangle(mangled));
    kernel_names_[mangled] = {std::string(mangled), id};
    return id;
  }

  std::uint32_t api_name_index(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    const std::uint64_t key = (static_cast<std::uint64_t>(domain) << 32) | cbid;
    auto it = api_names_.find(key);
    if (it != api_names_.end()) return it->second;
    const std::uint32_t id = name_index(api_name(domain, cbid));
    api_names_.emplace(key, id);
    return id;
  }

  bool room() {
    if (calls_.size() + activities_.size() < kMaxRecords) return true;
    ++dropped_;
    return false;
  }

  void convert_locked(const CUpti_Activity* rec) {
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        auto* r = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(rec);
        if (r->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
          step_of_[r->correlationId] = static_cast<std::int64_t>(r->externalId);
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        auto* r = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
        if (!room()) break;
        RuntimeCall c;
        c.begin_ns = static_cast<std::int64_t>(r->start);
        c.end_ns = static_cast<std::int64_t>(r->end);
        c.correlation = r->correlationId;
        c.name = api_name_index(rec->kind == CUPTI_ACTIVITY_KIND_DRIVER ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, r->cbid);
        calls_.push_back({c, r->threadId});
        break;
      }
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        auto* r = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        if (!room()) break;
        push_activity(ActivityKind::kernel, kernel_name_index(r->name), r->start, r->end, r->deviceId, r->streamId, 0, MemKind::none,
                      r->correlationId);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        auto* r = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
        if (!room()) break;
        ActivityKind k = ActivityKind::memcpy_other;
        MemKind host = MemKind::none;
        if (r->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD) { k = ActivityKind::memcpy_h2d; host = mem_kind(r->srcKind); }
        else if (r->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH) { k = ActivityKind::memcpy_d2h; host = mem_kind(r->dstKind); }
        else if (r->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD) k = ActivityKind::memcpy_d2d;
        const char* label = k == ActivityKind::memcpy_h2d ? "Memcpy HtoD" : k == ActivityKind::memcpy_d2h ? "Memcpy DtoH"
                          : k == ActivityKind::memcpy_d2d ? "Memcpy DtoD" : "Memcpy";
        push_activity(k, name_index(host == MemKind::none ? std::string(label) : fmt::format("{} ({})", label, mem_kind_name(host))), r->start,
                      r->end, r->deviceId, r->streamId, r->bytes, host, r->correlationId);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        auto* r = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
        if (!room()) break;
        push_activity(ActivityKind::memset, name_index("Memset"), r->start, r->end, r->deviceId, r->streamId, r->bytes, MemKind::none, r->correlationId);
        break;
      }
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        auto* r = reinterpret_cast<const CUpti_ActivitySynchronization2*>(rec);
        if (!room()) break;
        const char* what = r->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE ? "cudaEventSynchronize"
                         : r->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT ? "cudaStreamWaitEvent"
                         : r->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE ? "cudaStreamSynchronize"
                         : r->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE ? "cudaDeviceSynchronize" : "sync";
        const std::uint32_t stream = r->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : r->streamId;
        push_activity(ActivityKind::sync, name_index(what), r->start, r->end, 0, stream, 0, MemKind::none, r->correlationId);
        break;
      }
      case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        auto* r = reinterpret_cast<const CUpti_ActivityOverhead3*>(rec);
        if (!room()) break;
        push_activity(ActivityKind::overhead, name_index(fmt::format("cupti overhead {}", static_cast<int>(r->overheadKind))), r->start, r->end, 0, 0,
                      0, MemKind::none, 0);
        break;
      }
      default: break;
    }
  }

  void push_activity(ActivityKind kind, std::uint32_t name, std::uint64_t b, std::uint64_t e, std::uint32_t device,
                     std::uint32_t stream, std::uint64_t bytes, MemKind host, std::uint32_t corr) {
    DeviceActivity a;
    a.begin_ns = static_cast<std::int64_t>(b);
    a.end_ns = static_cast<std::int64_t>(e);
    a.device = static_cast<std::int32_t>(device);
    a.stream = stream;
    a.kind = kind;
    a.name = name;
    a.bytes = bytes;
    a.host_mem = host;
    a.correlation = corr;
    activities_.push_back(a);
  }

  static void disable_all() {
    for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                 CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                 CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_DRIVER})
      cuptiActivityDisable(k);
  }

  void reset_locked() {
    calls_.clear();
    activities_.clear();
    step_of_.clear();
    names_ = NameTable{};
    kernel_names_.clear();
    api_names_.clear();
    dropped_ = 0;
  }

  std::mutex mu_;  // the converted records and names below
  bool running_ = false;
  long registered_for_ = -1;      // cupti_detaches() when the callbacks were registered (-1: never)
  bool driver_work_ids_ = false;  // driver work calls enabled id by id (turned back off at stop)
  std::mutex free_mu_;  // free_buffers_ only: on_request's lock
  std::vector<uint8_t*> free_buffers_;
  BufferQueue queue_;  // filled buffers -> convert_buffer on the converter thread
  std::unordered_map<const char*, std::pair<std::string, std::uint32_t>> kernel_names_;  // CUPTI name pointer -> (text, name id)
  std::unordered_map<std::uint64_t, std::uint32_t> api_names_;                            // domain << 32 | cbid -> name id
  std::vector<PendingCall> calls_;
  std::vector<DeviceActivity> activities_;
  std::unordered_map<std::uint32_t, std::int64_t> step_of_;  // CUPTI correlation -> step (external id)
  NameTable names_;                 // collector-local ids until drained into the trace's table
  std::uint64_t dropped_ = 0;
};

// The session's handle on the process-wide CUPTI state.
class CuptiHandle final : public Collector {
 public:
  std::string_view name() const override { return "cupti"; }
  Status start(const SessionOptions& options, RangeHooks& hooks, TraceMeta& meta) override {
    if (!options.cupti) return Status::ok();
    if (Status st = CuptiCollector::instance().start(options.cupti_driver, options.cupti_driver_work, options.cupti_sync, options.cupti_every_call); !st.is_ok()) return st;
    started_ = true;
    meta.cupti = true;
    hooks.step_push = &CuptiCollector::push_step;
    hooks.step_pop = &CuptiCollector::pop_step;
    return Status::ok();
  }
  void stop_and_drain(Trace& trace) override {
    if (!started_) return;
    started_ = false;
    CuptiCollector::instance().stop_and_drain(trace);
  }
  ~CuptiHandle() override {
    Trace discard;
    stop_and_drain(discard);
  }

 private:
  bool started_ = false;
};

}  // namespace

std::unique_ptr<Collector> make_cupti_collector() { return std::make_unique<CuptiHandle>(); }

void prepare_cupti() { CuptiCollector::instance().prepare(); }

}  // namespace stalldx::cuda
