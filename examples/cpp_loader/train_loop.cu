// Example 1: a training-loop stand-in with its OWN input pipeline — a std::thread pool, TurboJPEG, a
// bounded queue of pinned (or pageable) batches, plain NVTX v3 ranges — that knows nothing of stalldx.
// `stalldx record -- ./train_loop ...` diagnoses it unmodified. Flags induce each stall class:
//
//   retrieval    --read-delay-ms 20        every file read waits (a slow store)
//   decoding     --workers 1               too few decode threads for the step
//   submission   --pageable --per-sample --sync --float --workers 16 --step-ms 10
//                                          pageable per-sample float32 copies, each synchronized
//                                          (with uint8 samples and 8 threads the loader, not the
//                                          copies, was the limit on the H200: decoding, rightly)
//                --launches 2000           thousands of tiny kernels per step (launch-bound)
//   device-bound --step-ms 60              a device step longer than the loader needs
//
// Ranges: "step" and "wait_batch" / "submit" / "sync" on the training thread, "read_file" and "decode"
// on the loader threads — names stalldx's built-in role map knows (no stalldx headers here).
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <turbojpeg.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  std::string data;
  int batch = 128, workers = 8, steps = 20, warmup = 3, size = 224, prefetch = 2, launches = 1;
  double read_delay_ms = 0, step_ms = 30;
  bool pageable = false, per_sample = false, sync = false, as_float = false;
  // One sample's bytes in a batch: RGB, one byte a channel or a float32 in [0, 1] (--float).
  std::size_t sample_bytes() const { return static_cast<std::size_t>(size) * size * 3 * (as_float ? sizeof(float) : 1); }
};

struct Range {  // RAII NVTX push/pop
  explicit Range(const char* name) { nvtxRangePushA(name); }
  // A loader range that names the batch it works on: `stalldx record` reads an integer payload as the
  // batch (numbered as the steps that consume them), so a wait is split by its own batch's work.
  Range(const char* name, long long batch) {
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name;
    a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    a.payload.llValue = batch;
    nvtxRangePushEx(&a);
  }
  ~Range() { nvtxRangePop(); }
};

#define CHECK(call)                                                                          \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "train_loop: %s: %s\n", #call, cudaGetErrorString(e_));           \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

// Spins for `ns` of device time (globaltimer): the "model step".
__global__ void step_kernel(long long ns, float* sink) {
  long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  while (now - start < ns);
  if (threadIdx.x == 0 && blockIdx.x == 0) sink[0] += 1.0f;
}
__global__ void tiny_kernel(float* sink) {
  if (threadIdx.x == 0) sink[blockIdx.x] += 1.0f;
}

struct Batch {
  unsigned char* data = nullptr;
  int index = 0;
};

// A bounded queue of filled batches; the loader threads fill, the training thread takes.
class Loader {
 public:
  Loader(const Options& o, std::vector<std::string> files) : o_(o), files_(std::move(files)) {
    const std::size_t bytes = static_cast<std::size_t>(o.batch) * o.sample_bytes();
    for (int i = 0; i < o.prefetch + 1; ++i) {
      Batch b;
      if (o.pageable) b.data = static_cast<unsigned char*>(std::malloc(bytes));
      else CHECK(cudaMallocHost(&b.data, bytes));
      free_.push_back(b);
    }
    for (int w = 0; w < o.workers; ++w) threads_.emplace_back([this] { work(); });
  }
  ~Loader() {
    {
      std::lock_guard<std::mutex> l(mu_);
      done_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  Batch take() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return !ready_.empty() && ready_.front().complete == o_.batch && ready_.front().batch.index == next_take_; });
    Batch b = ready_.front().batch;
    ready_.pop_front();
    ++next_take_;
    cv_.notify_all();
    return b;
  }
  void give_back(Batch b) {
    std::lock_guard<std::mutex> l(mu_);
    free_.push_back(b);
    cv_.notify_all();
  }

 private:
  struct Filling {
    Batch batch;
    int handed = 0, complete = 0;
  };
  void work() {
    tjhandle tj = tjInitDecompress();
    std::vector<unsigned char> file, rgb;
    for (;;) {
      Filling* f = nullptr;
      int sample = 0, batch_index = 0;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return done_ || has_work_locked(); });
        if (done_) break;
        if (ready_.empty() || ready_.back().handed == o_.batch) {
          ready_.push_back(Filling{free_.front(), 0, 0});
          free_.pop_front();
          ready_.back().batch.index = next_fill_++;
        }
        f = &ready_.back();
        sample = f->handed++;
        batch_index = f->batch.index;
      }
      const std::string& path = files_[(static_cast<std::size_t>(batch_index) * o_.batch + sample) % files_.size()];
      {
        Range r("read_file", batch_index);
        if (o_.read_delay_ms > 0) std::this_thread::sleep_for(std::chrono::microseconds(static_cast<long>(o_.read_delay_ms * 1000)));
        std::ifstream in(path, std::ios::binary);
        file.assign(std::istreambuf_iterator<char>(in), {});
      }
      {
        Range r("decode", batch_index);
        int w = 0, h = 0, sub = 0, cs = 0;
        unsigned char* out = f->batch.data + static_cast<std::size_t>(sample) * o_.sample_bytes();
        if (!file.empty() && tjDecompressHeader3(tj, file.data(), file.size(), &w, &h, &sub, &cs) == 0) {
          rgb.resize(static_cast<std::size_t>(w) * h * 3);
          if (tjDecompress2(tj, file.data(), file.size(), rgb.data(), w, 0, h, TJPF_RGB, TJFLAG_FASTDCT) == 0) {
            for (int y = 0; y < o_.size; ++y)  // nearest-neighbour resize + horizontal flip on odd samples
              for (int x = 0; x < o_.size; ++x) {
                const int sx = (sample & 1 ? o_.size - 1 - x : x) * w / o_.size, sy = y * h / o_.size;
                const unsigned char* px = rgb.data() + (static_cast<std::size_t>(sy) * w + sx) * 3;
                const std::size_t at = (static_cast<std::size_t>(y) * o_.size + x) * 3;
                if (o_.as_float)
                  for (int c = 0; c < 3; ++c) reinterpret_cast<float*>(out)[at + c] = px[c] * (1.0f / 255.0f);
                else std::memcpy(out + at, px, 3);
              }
          }
        }
      }
      {
        std::lock_guard<std::mutex> l(mu_);
        f->complete++;
      }
      cv_.notify_all();
    }
    tjDestroy(tj);
  }
  bool has_work_locked() const { return (!ready_.empty() && ready_.back().handed < o_.batch) || !free_.empty(); }

  const Options& o_;
  std::vector<std::string> files_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> free_;
  std::deque<Filling> ready_;  // in batch order; std::deque keeps element addresses on push_back
  int next_fill_ = 0, next_take_ = 0;
  bool done_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "train_loop: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--data") o.data = next();
    else if (a == "--batch") o.batch = std::atoi(next());
    else if (a == "--workers") o.workers = std::max(1, std::atoi(next()));
    else if (a == "--steps") o.steps = std::atoi(next());
    else if (a == "--warmup") o.warmup = std::atoi(next());
    else if (a == "--prefetch") o.prefetch = std::max(1, std::atoi(next()));
    else if (a == "--read-delay-ms") o.read_delay_ms = std::atof(next());
    else if (a == "--step-ms") o.step_ms = std::atof(next());
    else if (a == "--launches") o.launches = std::max(1, std::atoi(next()));
    else if (a == "--pageable") o.pageable = true;
    else if (a == "--per-sample") o.per_sample = true;
    else if (a == "--sync") o.sync = true;
    else if (a == "--float") o.as_float = true;
    else {
      std::fprintf(stderr, "train_loop: unknown option '%s'\n", a.c_str());
      return 2;
    }
  }
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(o.data, ec))
    if (e.is_regular_file() && (e.path().extension() == ".jpg" || e.path().extension() == ".jpeg")) files.push_back(e.path().string());
  if (files.empty()) {
    std::fprintf(stderr, "train_loop: no .jpg files under --data '%s'\n", o.data.c_str());
    return 2;
  }
  std::sort(files.begin(), files.end());
  const std::size_t sample_bytes = o.sample_bytes(), batch_bytes = sample_bytes * o.batch;
  unsigned char* device_batch = nullptr;
  float* sink = nullptr;
  CHECK(cudaMalloc(&device_batch, batch_bytes));
  CHECK(cudaMalloc(&sink, 4096 * sizeof(float)));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  std::deque<cudaEvent_t> inflight;
  Loader loader(o, files);
  const auto t0 = std::chrono::steady_clock::now();
  auto steady_begin = t0;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    if (step == o.warmup) steady_begin = std::chrono::steady_clock::now();
    Range s("step");
    Batch b;
    {
      Range r("wait_batch");
      b = loader.take();
    }
    {
      Range r("submit");
      if (o.per_sample)
        for (int i = 0; i < o.batch; ++i) {
          CHECK(cudaMemcpyAsync(device_batch + i * sample_bytes, b.data + i * sample_bytes, sample_bytes, cudaMemcpyHostToDevice, stream));
          if (o.sync) CHECK(cudaStreamSynchronize(stream));
        }
      else CHECK(cudaMemcpyAsync(device_batch, b.data, batch_bytes, cudaMemcpyHostToDevice, stream));
      if (o.sync) CHECK(cudaStreamSynchronize(stream));
      if (o.launches > 1)
        for (int k = 0; k < o.launches; ++k) tiny_kernel<<<1, 32, 0, stream>>>(sink);
      else step_kernel<<<1, 32, 0, stream>>>(static_cast<long long>(o.step_ms * 1e6), sink);
      CHECK(cudaGetLastError());
    }
    // The batch's host memory is free once its copy is done (pageable copies are synchronous).
    cudaEvent_t copied;
    CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
    CHECK(cudaEventRecord(copied, stream));
    {
      Range r("sync");  // at most 2 steps in flight
      CHECK(cudaEventSynchronize(copied));
      inflight.push_back(copied);
      while (inflight.size() > 2) {
        CHECK(cudaEventSynchronize(inflight.front()));
        CHECK(cudaEventDestroy(inflight.front()));
        inflight.pop_front();
      }
    }
    loader.give_back(b);
  }
  CHECK(cudaStreamSynchronize(stream));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - steady_begin).count();
  std::printf("train_loop: %d steady steps, %.0f img/s\n", o.steps, o.steps * o.batch / std::max(seconds, 1e-9));
  for (cudaEvent_t e : inflight) cudaEventDestroy(e);
  cudaFree(device_batch);
  cudaFree(sink);
  return 0;
}
