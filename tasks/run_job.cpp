#include "stalldx/tasks/run_job.h"

#include <fmt/format.h>
#include <unistd.h>

#include "stalldx/datasets/generator.h"
#include "stalldx/trace_io.h"

namespace stalldx::tasks {

RunJob::~RunJob() {
  if (joined_) ranks::leave(world_, abandoned_);
}

std::string RunJob::who() const {
  const RunConfig& c = o_.config;
  return c.world_size > 1 ? fmt::format(" (rank {} of {}, pid {})", c.rank, c.world_size, getpid()) : "";
}

Status RunJob::open(bool& input_error) {
  input_error = false;
  RunConfig& c = o_.config;
  if (Status st = ranks::join(world_); !st.is_ok()) return st;
  joined_ = true;
  if (Status st = ranks::configure_rank(world_, c); !st.is_ok()) return st;
  if (Status st = pipeline::validate(c); !st.is_ok()) return st;
  if (!c.trace.empty() && !c.profile)
    return Status::invalid(fmt::format("--trace '{}' with --no-profile: nothing would be recorded; drop one of them", c.trace));
  if (c.data.empty()) {  // made once, by rank 0 (the others wait for it)
    Status st = c.rank == 0 ? datasets::ensure_default_dataset(c.data, true, o_.stop) : Status::ok();
    if (Status b = ranks::barrier(world_); st.is_ok() && !b.is_ok()) st = b;
    if (st.is_ok() && c.rank != 0) st = datasets::ensure_default_dataset(c.data, false, o_.stop);
    if (!st.is_ok()) return Status::io(fmt::format("cannot make the default dataset: {}", st.message()));
  }
  input_error = true;  // from here, what is refused is a path the user gave
  trace_check_.forbidden_dir = c.data;
  if (!c.trace.empty()) {
    if (Status st = check_output_path(c.trace, trace_check_); !st.is_ok()) return st;
    if (Status st = trace_claim_.claim(c.trace); !st.is_ok()) return st;
  }
  if (!o_.html.empty()) {
    if (!c.profile) {
      input_error = false;
      return Status::invalid(fmt::format("--html '{}' with --no-profile: there would be no diagnosis", o_.html));
    }
    OutputCheck html_check{"HTML report", c.data};
    if (Status st = check_output_path(o_.html, html_check); !st.is_ok()) return st;
  }
  input_error = false;
  return Status::ok();
}

Status RunJob::run(pipeline::RunResult& r) {
  const RunConfig& c = o_.config;
  const std::atomic<bool>* stop = o_.stop != nullptr ? &o_.stop->requested : nullptr;
  std::unique_ptr<pipeline::StepCollective> collective;
  if (Status st = ranks::make_step_collective(world_, c, stop, collective); !st.is_ok()) return st;
  const std::string who = this->who();
  const auto say = [this](const std::string& line) {
    if (o_.notice) o_.notice(line);
  };
  // Progress: where the run is (also what the signal tests wait for before interrupting).
  Status st = pipeline::run_pipeline(c, r, stop, [&](pipeline::RunPhase phase) {
    if (phase == pipeline::RunPhase::started) {
      for (const std::string& n : r.device.notes) say("stalldx run: note: " + n);
      say(fmt::format("stalldx run{}: started ({} warm-up + {} steps)", who, c.warmup, c.steps));
    } else {
      say(fmt::format("stalldx run{}: warm-up done, measuring {} steps", who, c.steps));
    }
  }, collective.get());
  if (r.has_trace && world_.mpi) ranks::describe(world_, r.trace.meta.config);
  abandoned_ = r.stuck_in_collective_step >= 0;
  return st;
}

Status RunJob::write_trace(const pipeline::RunResult& r) const {
  if (!r.has_trace || o_.config.trace.empty()) return Status::ok();
  return write_trace_file(r.trace, o_.config.trace);
}

}  // namespace stalldx::tasks
