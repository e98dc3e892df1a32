#include "stalldx/record/role_map.h"

#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#include <fmt/format.h>

#include <toml++/toml.h>

#include "stalldx/trace_io.h"

namespace stalldx::record {

namespace {
struct Default {
  const char* pattern;
  Role role;
};
// Order matters: specific before general.
constexpr Default kDefaults[] = {
    // stalldx's own role names (a program annotated with them, or the reference pipeline under record)
    {"step|train_step", Role::step},
    {"wait_batch|wait_for_batch|next_batch", Role::wait_batch},
    {"read_file|retrieval|read|load_file|fetch", Role::retrieval},
    {"decode_transform|decode|transform|augment|preprocess", Role::decode},
    {"collate|collate_fn", Role::collate},
    {"submit|h2d|copy_to_device|to_device", Role::submit},
    {"sync|synchronize", Role::sync},
    // PyTorch
    {"ProfilerStep#\\d+", Role::step},
    {"enumerate\\(DataLoader\\)#.*__next__|DataLoader.*__next__|dataloader_next", Role::wait_batch},
    {"Optimizer\\.step#.*|Optimizer\\.zero_grad#.*", Role::submit},  // the optimizer's kernels are the step's device work
    {"aten::copy_|aten::to|aten::_to_copy", Role::submit},
    {"cudaStreamSynchronize|cudaDeviceSynchronize|aten::item|aten::_local_scalar_dense", Role::sync},
    // NVIDIA DALI
    {"\\[DALI\\].*Read.*|.*FileReader.*|.*readers__File.*", Role::retrieval},
    {".*ImageDecoder.*|.*decoders__Image.*|\\[DALI\\].*(Decode|Resize|Crop|Normalize).*", Role::decode},
    // The seed's `data_load` (batch retrieval + transfer in one range) stays unmapped on purpose: the
    // diagnosis finds the copies inside it and says the wait cannot be split.
    // NCCL's own NVTX ranges (NCCL_NVTX) and MPI profiling wrappers
    {"nccl(AllReduce|ReduceScatter|AllGather|Broadcast|Reduce)|MPI_(Allreduce|Reduce_scatter|Allgather|Bcast)", Role::collective},
    // common loop annotations
    {"(train_)?iter(ation)?(_\\d+)?|batch_\\d+", Role::step},
    {"__getitem__|getitem|load_sample", Role::decode},
    {"forward|backward|optimizer_step|loss", Role::user},
};

Status add_rule(RoleMap& m, std::vector<RoleRule>& rules, const std::string& pattern, const std::string& domain, Role role,
                const std::string& where) {
  (void)m;
  RoleRule r{pattern, domain, role, {}};
  try {
    r.re = std::regex(pattern, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    return Status::invalid(fmt::format("{}: match = \"{}\" is not a regular expression: {}", where, pattern, e.what()));
  }
  rules.push_back(std::move(r));
  return Status::ok();
}
}  // namespace

RoleMap RoleMap::defaults() {
  RoleMap m;
  for (const Default& d : kDefaults) (void)add_rule(m, m.rules_, d.pattern, "", d.role, "built-in");
  return m;
}

Status RoleMap::parse(const std::string& text, const std::string& origin, RoleMap& out) {
  out = defaults();
  toml::parse_result parsed = toml::parse(text, origin);
  if (!parsed) {
    const auto& e = parsed.error();
    return Status::invalid(fmt::format("{}:{}:{}: {}", origin, e.source().begin.line, e.source().begin.column, e.description()));
  }
  const toml::table& tbl = parsed.table();
  for (auto&& [key, node] : tbl) {
    if (key.str() != "role")
      return Status::invalid(fmt::format("{}:{}: unknown key '{}' (expected [[role]] tables)", origin, node.source().begin.line, key.str()));
  }
  const toml::array* arr = tbl["role"].as_array();
  if (tbl.contains("role") && arr == nullptr)
    return Status::invalid(fmt::format("{}: 'role' must be an array of tables ([[role]])", origin));
  std::vector<RoleRule> user;
  if (arr != nullptr) {
    for (const toml::node& n : *arr) {
      const std::string where = fmt::format("{}:{}", origin, n.source().begin.line);
      const toml::table* t = n.as_table();
      if (t == nullptr) return Status::invalid(fmt::format("{}: each [[role]] must be a table", where));
      for (auto&& [k, v] : *t)
        if (k.str() != "match" && k.str() != "role" && k.str() != "domain")
          return Status::invalid(fmt::format("{}: unknown key '{}' in [[role]] (match, role, domain)", where, k.str()));
      const auto match = (*t)["match"].value<std::string>();
      const auto role = (*t)["role"].value<std::string>();
      const auto domain = (*t)["domain"].value<std::string>();
      if (!match) return Status::invalid(fmt::format("{}: [[role]] needs match = \"regex\"", where));
      if (!role) return Status::invalid(fmt::format("{}: [[role]] needs role = \"...\"", where));
      const auto r = role_from_name(*role);
      if (!r)
        return Status::invalid(fmt::format("{}: role = \"{}\" is not a role (step, wait_batch, retrieval, decode, collate, submit, sync, user)",
                                           where, *role));
      if (Status st = add_rule(out, user, *match, domain.value_or(""), *r, where); !st.is_ok()) return st;
    }
  }
  user.insert(user.end(), std::make_move_iterator(out.rules_.begin()), std::make_move_iterator(out.rules_.end()));
  out.rules_ = std::move(user);
  return Status::ok();
}

Status RoleMap::load(const std::string& path, RoleMap& out) {
  std::string text;
  if (Status st = read_text_file(path, text); !st.is_ok()) return st.prefixed(fmt::format("--roles {}", path));
  return parse(text, path, out);
}

std::optional<Role> RoleMap::match(const std::string& name, const std::string& domain) const {
  for (const RoleRule& r : rules_) {
    if (!r.domain.empty() && r.domain != domain) continue;
    if (std::regex_match(name, r.re)) return r.role;
  }
  return std::nullopt;
}

}  // namespace stalldx::record
