// Instruments a toy loader with the public header only, writes a trace, and checks it loads back.
#include <stalldx/profiler.h>
#include <stalldx/trace_io.h>

#include <cstdio>

int main(int argc, char** argv) {
  stalldx::Session session;
  if (!session.start({}).is_ok()) return 1;
  stalldx::set_thread_name("consumer");
  for (int step = 0; step < 3; ++step) {
    stalldx::StepMark mark(step, step);
    STALLDX_RANGE(wait_batch, "next_batch", stalldx::RangeIds{step, step, -1});
  }
  session.stop();
  const char* path = argc > 1 ? argv[1] : "consumer-trace.json";
  if (!session.write(path).is_ok()) return 2;
  stalldx::Trace back;
  if (!stalldx::read_trace_file(path, back).is_ok() || back.ranges.size() != 6) return 3;
  std::printf("consumer: %zu ranges recorded and read back\n", back.ranges.size());
  return 0;
}
