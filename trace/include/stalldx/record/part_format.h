// The files a recorded process leaves in the record directory (STALLDX_RECORD_DIR), written by the
// injection library (inject/) and read by the merger (record/merge.cpp). Same host, same ABI: the
// binary parts are native-endian POD. Everything a process writes is durable as soon as it is written
// (file-backed shared mappings, O_APPEND lines), so a process that _exit()s, crashes or is killed
// leaves what it recorded up to that moment.
//
//   <pid>.proc            one line: pid \t ppid \t command line (first record of the process)
//   <pid>.names           lines: kind \t id \t text (kind 'n' range name, 'd' domain, 't' thread name by
//                         tid, 'h' what the Python hook did, 'r' the launcher's rank: id = rank, text =
//                         world size \t job); tab, newline and backslash in text escaped as \t, \n and a doubled backslash
//   <pid>.<tid>.ranges    PartHeader, then PartRange records (a sparse file: pages exist as written)
//   <pid>.cuda.json       the process's CUPTI records as a stalldx trace (written at its exit)
//   <pid>.cuda.w<N>.json  under --sample: window N's CUPTI records (written when the window closes;
//                         the oldest but the first are removed beyond kMaxWindowFiles)
//   <pid>.windows         under --sample: lines "attach|detach \t N \t ns \t step" at each window edge
//                         (sampling.h); a window still open at exit ends with the recording
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace stalldx::record {

inline constexpr std::uint64_t kPartMagic = 0x31746170786c6c73ull;  // "sllxpat1"
inline constexpr std::uint32_t kPartVersion = 3;
inline constexpr std::uint32_t kPartRangeCapacity = 1u << 20;  // per thread; beyond it ranges are dropped, or a ring wraps (PartHeader)
inline constexpr const char* kRecordDirEnv = "STALLDX_RECORD_DIR";
// The parts folder `record` makes beside the trace: this prefix + six characters of mkdtemp's.
inline constexpr std::string_view kPartsFolderPrefix = ".stalldx-record-";
// Records a part holds, when smaller than kPartRangeCapacity (>= 1024): for tests of the ring and the cap.
inline constexpr const char* kPartCapacityEnv = "STALLDX_PART_CAPACITY";
// `record --step` and `--roles`, for the injection's live step marks under --sample (sampling.h).
inline constexpr const char* kStepPatternEnv = "STALLDX_STEP";
inline constexpr const char* kRolesFileEnv = "STALLDX_ROLES_FILE";
// `record --sample` / `--on-demand`: "1" finalizes CUPTI between windows (CUPTI's dynamic detach; the
// default, `--no-cupti-detach` leaves it unset) instead of only turning its records off. Crashes of
// PyTorch runs before two fixes (profiler/cuda/cupti_detach.cpp); after them 20 of 20 sampled runs of
// an eager ResNet-50 loop completed (H100, 2026-12-06).
inline constexpr const char* kCuptiDetachEnv = "STALLDX_CUPTI_DETACH";
// Window files a process keeps: the first and the newest kMaxWindowFiles - 1 (a long run's trace stays bounded).
inline constexpr int kMaxWindowFiles = 64;
// stalldx's own NVTX domain (the profiler's mirror, the Python hook): a range's category is its role + 1.
inline constexpr const char* kStalldxDomain = "stalldx";
// The name the Python hook gives one iteration of a loop over a DataLoader (from one __next__ to the
// next): the step boundary of a program with no step ranges of its own (record/step_inference.h).
inline constexpr const char* kPythonLoopStepName = "DataLoader loop iteration";
// The name it gives one iteration of a loop that makes its batches without a DataLoader: from the end
// of one backward pass to the end of the next (profiler/python/stalldx_hook_loop.py). Same rank.
inline constexpr const char* kPythonBackwardStepName = "training loop iteration (backward to backward)";
// The name it gives a DataLoader iteration in which no backward pass ran, once the process has made one
// (a validation loader's): a range of role user, not a step; the report counts them apart.
inline constexpr const char* kPythonEvalIterationName = "DataLoader loop iteration without a backward pass (evaluation)";
// The name it gives a multi-process DataLoader iterator's construction (its worker processes started: once
// an epoch, or every evaluation pass of a loader without persistent workers): role decode, its payload
// the batch id of the iterator's first batch.
inline constexpr const char* kPythonIteratorStartName = "DataLoader iterator start (worker processes)";
// The name it gives a DataLoader iteration on a thread that never runs a backward pass while another
// thread does (a prefetch thread filling the loop's queue): role user; the loop's steps are its backward passes.
inline constexpr const char* kPythonPrefetchIterationName = "DataLoader iteration on a thread that runs no backward pass (a prefetch thread)";
// The name of the mark a DataLoader worker process makes as it starts, before torch's worker loop seeds
// its generators (role user, 1 ns long): a worker with this mark and no batch made was alive but never
// got to its first batch (record's summary says so when the run did not end by itself).
inline constexpr const char* kPythonWorkerStartName = "DataLoader worker process start";
// Is `name` one of the Python hook's step names?
inline bool python_hook_step_name(std::string_view name) { return name == kPythonLoopStepName || name == kPythonBackwardStepName; }
// The Python hook's batch ids (stalldx_hook.py _batch_id): (iterator << 40) | (pass << 24) | index, the
// iterator counted from 0 in the process (each iter() over a DataLoader), the pass counted from 0 within
// it (persistent workers), the index the batch's within the pass. The first iterator's ids are plain
// indices, as are other sources' (a step number).
inline constexpr int kBatchIteratorShift = 40, kBatchPassShift = 24;
// For people: "batch 5", or "batch 5 of DataLoader iterator 3" (counted from 1), ", pass 2" if not the first.
inline std::string batch_label(std::int64_t id) {
  if (id < (std::int64_t{1} << kBatchPassShift)) return "batch " + std::to_string(id);
  const std::int64_t index = id & ((std::int64_t{1} << kBatchPassShift) - 1);
  const std::int64_t pass = (id >> kBatchPassShift) & 0xFFFF, iterator = id >> kBatchIteratorShift;
  std::string s = "batch " + std::to_string(index) + " of DataLoader iterator " + std::to_string(iterator + 1);
  return pass > 0 ? s + ", pass " + std::to_string(pass + 1) : s;
}
// Which optional CUPTI records the injection enables (`stalldx record --no-cuda-driver / --no-cuda-sync /
// --cuda-every-call`): a comma list of "driver" (driver API calls), "sync" (synchronization activity) and
// "every-call" (state queries too: cudaGetLastError, cudaFuncGetAttributes, ...), "none" for none of them;
// unset means driver and sync. These two functions are the format's one definition.
inline constexpr const char* kRecordCudaEnv = "STALLDX_RECORD_CUDA";
struct OptionalCudaRecords {
  bool driver = true, sync = true, every_call = false;
  bool operator==(const OptionalCudaRecords&) const = default;
};
inline std::string cuda_records_env(OptionalCudaRecords r) {
  std::string s;
  for (auto [on, word] : {std::pair{r.driver, "driver"}, std::pair{r.sync, "sync"}, std::pair{r.every_call, "every-call"}})
    if (on) s += s.empty() ? word : std::string(",") + word;
  return s.empty() ? "none" : s;
}
inline OptionalCudaRecords cuda_records_from_env(const char* value) {
  if (value == nullptr) return {};
  const std::string_view v(value);
  auto has = [&](std::string_view w) { return v.find(w) != std::string_view::npos; };
  return {has("driver"), has("sync"), has("every-call")};
}

struct PartHeader {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t record_size;        // sizeof(PartRange)
  std::int64_t pid, tid;
  std::uint64_t pthread_id;         // pthread_self() of the thread, to match CUPTI's thread ids
  std::uint64_t count;              // records written (each begins open: end_ns == 0)
  std::uint64_t dropped;            // ranges beyond the capacity
  std::uint64_t unbalanced_pops;    // pops with no open push range on the thread
  // A ring (record --sample, a long run): once kPartRangeCapacity are written, record `count` goes to
  // slot count % capacity, overwriting the oldest; `overwritten` counts them (count - capacity). Without
  // it, ranges beyond the capacity are dropped (`dropped`).
  std::uint64_t overwritten;
  std::uint64_t ring;               // 1: this part wraps
  std::uint64_t reserved[6];
};

// complete: written whole, after the fact, with its CPU time and run-queue delay (the Python hook).
enum class PartRangeKind : std::uint32_t { push_pop = 0, start_end = 1, complete = 2 };

struct PartRange {
  std::int64_t begin_ns;            // CLOCK_MONOTONIC
  std::int64_t end_ns;              // 0 = still open (never closed if the process ended)
  std::uint32_t name;               // id in <pid>.names ('n')
  std::uint32_t domain;             // id in <pid>.names ('d'); 0 = the default domain
  std::uint32_t category;           // NVTX category, 0 = none
  PartRangeKind kind;
  // Push/pop ranges: the thread's CPU time and run-queue delay (schedstat) inside the range, ns; while
  // the range is open they hold the values at its begin. -1 = not sampled (start/end ranges, which may
  // end on another thread; run-queue delay where the kernel offers no schedstat).
  std::int64_t cpu_ns;
  std::int64_t runq_ns;
  // The range's integer NVTX payload when it has one (int32/int64/uint32/uint64, >= 0), else -1: by
  // stalldx's convention the batch the range works on, numbered as the steps that consume batches.
  std::int64_t payload;
};
static_assert(sizeof(PartRange) == 56);

}  // namespace stalldx::record
