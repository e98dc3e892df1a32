#include <algorithm>
#include <fmt/format.h>

#include "recorder.h"
#include "stalldx/profiler.h"
#include "stalldx/host_facts.h"
#include "stalldx/trace_io.h"

namespace stalldx {

Session::Session() = default;
Session::~Session() { stop(); }

namespace {
// Takes `from`'s hook into `into` unless another collector already set it.
template <typename F>
bool merge_hook(F& into, F from) {
  if (from == nullptr) return true;
  if (into != nullptr) return false;
  into = from;
  return true;
}
}  // namespace

Status Session::add_collector(std::unique_ptr<Collector> collector) {
  if (running_) return Status::invalid("collectors are added before Session::start");
  if (collector == nullptr) return Status::invalid("null collector");
  collectors_.push_back(std::move(collector));
  return Status::ok();
}

Status Session::start(const SessionOptions& options) {
  detail::SessionState& s = detail::session_state();
  if (s.recording.load()) return Status::invalid("a stalldx session is already recording");
  if (options.ranges_per_thread == 0 || options.counters_per_thread == 0)
    return Status::invalid("session buffer bounds must be > 0");
  options_ = options;
  trace_ = Trace{};
  // Collectors first: device work of the first step must not predate them.
  RangeHooks hooks;
  started_.clear();
  for (const std::unique_ptr<Collector>& c : collectors_) {
    RangeHooks mine;
    Status st = c->start(options, mine, trace_.meta);
    if (st.is_ok() && !(merge_hook(hooks.range_push, mine.range_push) && merge_hook(hooks.range_pop, mine.range_pop) &&
                        merge_hook(hooks.step_push, mine.step_push) && merge_hook(hooks.step_pop, mine.step_pop)))
      st = Status::invalid("two collectors set the same range hook");
    if (!st.is_ok()) {
      c->stop_and_drain(trace_);
      trace_.meta.config[std::string(c->name()) + "_warning"] = st.message();
      continue;
    }
    started_.push_back(c.get());
  }
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.buffers.clear();
    s.cpu_time = options.cpu_time;
    s.nvtx = options.nvtx && hooks.range_push != nullptr && hooks.range_pop != nullptr;
    s.range_push.store(s.nvtx ? hooks.range_push : nullptr, std::memory_order_relaxed);
    s.range_pop.store(s.nvtx ? hooks.range_pop : nullptr, std::memory_order_relaxed);
    s.step_push.store(hooks.step_push, std::memory_order_relaxed);
    s.step_pop.store(hooks.step_pop, std::memory_order_relaxed);
    s.range_cap = options.ranges_per_thread;
    s.prefault = options.prefault;
    s.counter_cap = options.counters_per_thread;
    s.generation.fetch_add(1, std::memory_order_acq_rel);
  }
  trace_.meta.host = options.host;
  trace_.meta.cpu_time = options.host && options.cpu_time;
  trace_.meta.nvtx = s.nvtx;
  trace_.meta.origin_ns = now_ns();
  trace_.meta.host_facts = current_host_facts();
  s.recording.store(options.host, std::memory_order_release);
  running_ = true;
  return Status::ok();
}

void Session::set_meta(std::string key, std::string value) { trace_.meta.config[std::move(key)] = std::move(value); }

void Session::set_interrupted(bool interrupted, std::int64_t steps_completed) {
  trace_.meta.interrupted = interrupted;
  trace_.meta.steps_completed = steps_completed;
}

void Session::stop() {
  if (!running_) return;
  running_ = false;
  detail::SessionState& s = detail::session_state();
  s.recording.store(false, std::memory_order_release);
  s.range_push.store(nullptr, std::memory_order_relaxed);
  s.range_pop.store(nullptr, std::memory_order_relaxed);
  s.step_push.store(nullptr, std::memory_order_relaxed);
  s.step_pop.store(nullptr, std::memory_order_relaxed);
  std::vector<std::shared_ptr<detail::ThreadBuffer>> buffers;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    buffers.swap(s.buffers);
    s.generation.fetch_add(1, std::memory_order_acq_rel);  // late writers re-register into nothing
  }
  trace_.names = detail::name_table();
  for (std::size_t t = 0; t < buffers.size(); ++t) {
    detail::ThreadBuffer& b = *buffers[t];
    const auto lane = static_cast<std::uint32_t>(t);
    trace_.threads.push_back(ThreadInfo{lane, b.os_tid, b.name, b.pthread_id});
    const std::size_t nr = b.range_count.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < nr; ++i) {
      const detail::RawRange& r = (*b.ranges)[i];
      const std::int64_t runq =
          r.runq_frac == detail::kRunqNotSampled
              ? -1
              : static_cast<std::int64_t>(static_cast<double>(r.end_ns - r.begin_ns) * r.runq_frac / detail::kRunqScale + 0.5);
      trace_.ranges.push_back(HostRange{r.begin_ns, r.end_ns, lane, r.name, r.role, r.step, r.batch, r.sample,
                                        r.cpu_ns, runq, r.bytes});
    }
    const std::size_t nc = b.counter_count.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < nc; ++i) {
      const detail::RawCounter& c = (*b.counters)[i];
      trace_.counters.push_back(CounterSample{c.ts_ns, c.name, c.value});
    }
    trace_.meta.dropped_host += b.range_dropped.load();
    trace_.meta.dropped_counters += b.counter_dropped.load();
  }
  std::sort(trace_.ranges.begin(), trace_.ranges.end(),
            [](const HostRange& a, const HostRange& b) { return a.begin_ns < b.begin_ns; });
  std::sort(trace_.counters.begin(), trace_.counters.end(),
            [](const CounterSample& a, const CounterSample& b) { return a.ts_ns < b.ts_ns; });
  for (Collector* c : started_) c->stop_and_drain(trace_);
  trace_.meta.host_facts.load_1m_end = load_average_1m();
  started_.clear();
}

Status Session::write(const std::string& path) const { return write_trace_file(trace_, path); }

}  // namespace stalldx
