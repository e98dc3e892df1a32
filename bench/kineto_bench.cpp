// Reading + diagnosing a torch.profiler trace: a synthetic Kineto document shaped like a PyTorch
// training loop (per step: ProfilerStep, DataLoader __next__, CPU ops, launches, kernels, flows) of
// about N events (default 200,000), or a real trace file; prints the times. Never asserts a timing.
//   kineto_bench [events | FILE.pt.trace.json[.gz]]
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "stalldx/diagnose/diagnosis.h"
#include "stalldx/record/kineto.h"
#include "stalldx/trace_io.h"

using namespace stalldx;

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string synthetic(std::size_t target) {
  std::string s = R"({"schemaVersion":1,"baseTimeNanoseconds":1790857026000000000,"traceEvents":[)";
  std::size_t n = 0;
  std::uint64_t corr = 1;
  auto add = [&](const std::string& e) {
    if (n++) s += ",\n";
    s += e;
  };
  double t = 1000;
  for (int step = 0; n < target; ++step) {
    add(fmt::format(R"J({{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{}","pid":1,"tid":1,"ts":{:.3f},"dur":45000}})J", step, t));
    add(fmt::format(R"J({{"ph":"X","cat":"user_annotation","name":"enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__","pid":1,"tid":1,"ts":{:.3f},"dur":300}})J", t + 5));
    double h = t + 400;
    for (int op = 0; op < 250; ++op, h += 160) {
      add(fmt::format(R"J({{"ph":"X","cat":"cpu_op","name":"aten::conv2d","pid":1,"tid":1,"ts":{:.3f},"dur":150,"args":{{"External id":{},"Sequence number":{}}}}})J", h, corr, op));
      add(fmt::format(R"J({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{:.3f},"dur":8,"args":{{"cbid":211,"correlation":{}}}}})J", h + 100, corr));
      add(fmt::format(R"J({{"ph":"X","cat":"kernel","name":"void cudnn::conv_kernel<float>","pid":0,"tid":7,"ts":{:.3f},"dur":77,"args":{{"device":0,"stream":7,"correlation":{},"grid":[1,1,1]}}}})J", h + 120, corr));
      add(fmt::format(R"J({{"ph":"s","id":{},"pid":1,"tid":1,"ts":{:.3f},"cat":"ac2g","name":"ac2g"}})J", corr, h + 100));
      ++corr;
    }
    t += 45000;
  }
  s += "]}";
  return s;
}
}  // namespace

int main(int argc, char** argv) {
  std::string text, what;
  const std::string arg = argc > 1 ? argv[1] : "200000";
  auto t0 = std::chrono::steady_clock::now();
  if (arg.find_first_not_of("0123456789") == std::string::npos) {
    text = synthetic(std::strtoull(arg.c_str(), nullptr, 10));
    what = fmt::format("synthetic, {} events", arg);
  } else if (Status st = read_text_file(arg, text); !st.is_ok()) {
    fmt::print(stderr, "kineto_bench: {}\n", st.message());
    return 2;
  } else {
    what = arg;
  }
  const double load_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  Trace trace;
  record::KinetoReport rep;
  if (Status st = record::read_kineto_json(text, record::RoleMap::defaults(), trace, rep); !st.is_ok()) {
    fmt::print(stderr, "kineto_bench: {}\n", st.message());
    return 1;
  }
  const double read_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  const diagnose::Report r = diagnose::diagnose(trace);
  const double diag_s = seconds_since(t0);
  fmt::print("{}: {:.1f} MB JSON ({} from {:.3f} s)\n  read   {:.3f} s ({:.0f} MB/s): {} events → {} host ranges, {} calls, {} device records\n"
             "  diagnose {:.3f} s: {} steps\n  read + diagnose {:.3f} s\n",
             what, text.size() / 1e6, arg.find_first_not_of("0123456789") == std::string::npos ? "generated" : "loaded", load_s, read_s,
             text.size() / 1e6 / read_s, rep.events, rep.host_ranges, rep.calls, rep.device, diag_s, r.steps.size(), read_s + diag_s);
  return 0;
}
