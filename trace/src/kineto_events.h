// Internal: one pass over a Kineto trace's events into the Trace under construction (kineto.cpp runs it,
// then the phases that need every event: ops earning their roles, the loader's ops, steps). Lanes are
// one per (pid, tid); names are interned once each, their roles matched once each.
#pragma once

#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stalldx/name_table.h"
#include "stalldx/record/kineto.h"
#include "stalldx/record/role_map.h"
#include "stalldx/trace_model.h"

namespace stalldx::record {

inline std::int64_t kineto_ns(double us) { return static_cast<std::int64_t>(std::llround(us * 1000.0)); }

class KinetoEvents {
 public:
  // Appends to `out` (threads, names, calls, activities) and counts into `rep`; both outlive this.
  KinetoEvents(const RoleMap& roles, Trace& out, KinetoReport& rep) : roles_(roles), out_(out), rep_(rep) {}
  void on_event(const simdjson::dom::element& ev);
  // A complete event with no category is a CPU op (the array form: KinetoReport::array_form).
  bool untyped_host_ops = false;

  struct PendingRange {
    HostRange range;
    bool is_op = false;  // a CPU op (its submit/sync role must be earned by a CUDA call inside it)
  };
  std::vector<PendingRange> ranges;  // annotations, and CPU ops with a role
  std::vector<HostRange> folded;     // CPU ops with no role (the loader's work when inside a wait)
  std::map<std::int64_t, std::string> process_names;
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> thread_names;
  double first_ts = std::numeric_limits<double>::infinity();  // µs, the earliest event of any kind

 private:
  struct NameInfo {
    std::uint32_t id;
    std::optional<Role> role;
  };
  std::uint32_t lane(std::int64_t pid, std::int64_t tid);
  const NameInfo& info(std::string_view name);

  const RoleMap& roles_;
  Trace& out_;
  KinetoReport& rep_;
  std::map<std::pair<std::int64_t, std::int64_t>, std::uint32_t> lane_of_;
  TextMap<NameInfo> names_;  // looked up by string_view: no allocation per event
};

}  // namespace stalldx::record
