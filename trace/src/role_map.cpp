#include "stalldx/record/role_map.h"
#include "stalldx/toml_guard.h"

#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#include <fmt/format.h>

#include <cctype>
#include <toml++/toml.h>

#include "stalldx/trace_io.h"

namespace stalldx::record {

namespace {
struct Default {
  const char* pattern;
  Role role;
  bool on_word_form;
};
// Word-form rules are anchored on the whole label; `N` lets numbers follow ("step 12", "fwd_3").
#define N "(_\\d+)*_$"
// Order matters: specific before general.
constexpr Default kDefaults[] = {
    // PyTorch (torch.profiler op names, matched as they are)
    {"^ProfilerStep#\\d+$", Role::step, false},
    {"^enumerate\\(DataLoader\\)#.*__next__|DataLoader.*__next__", Role::wait_batch, false},
    {"^Optimizer\\.(step|zero_grad)#", Role::submit, false},  // the optimizer's kernels are the step's device work
    {"^aten::(copy_|to|_to_copy)$", Role::submit, false},
    {"^(cudaStreamSynchronize|cudaDeviceSynchronize|aten::item|aten::_local_scalar_dense)$", Role::sync, false},
    // NVIDIA DALI
    {"^\\[DALI\\].*Read|FileReader|readers__File", Role::retrieval, false},
    {"ImageDecoder|decoders__Image|^\\[DALI\\].*(Decode|Resize|Crop|Normalize)", Role::decode, false},
    // NCCL's own NVTX ranges (NCCL_NVTX) and MPI profiling wrappers
    {"^(nccl(AllReduce|ReduceScatter|AllGather|Broadcast|Reduce)|MPI_(Allreduce|Reduce_scatter|Allgather|Bcast))$", Role::collective, false},
    // The words of loop annotations, in any case and joining. The seed's `data_load` (batch retrieval +
    // transfer in one range) matches none on purpose: the diagnosis finds the copies inside it and says
    // the wait cannot be split.
    {"^_(train(ing)?_)?(step|iter|iteration)" N, Role::step, true},
    {"^_(batch|train(ing)?_batch)_\\d+_$", Role::step, true},
    {"^_epoch_\\d+_(step|iter|iteration|batch)_\\d+_$", Role::step, true},  // "epoch 1 step 3"
    {"^_(data_?wait|wait_?(for_)?(data|batch|input)|data_?loader(_iter(ator)?)?(_next)?|(get_?)?next_?batch|get_?batch|fetch(_batch|_data|_next(_batch)?)?|batch_?fetch|"
     "load_?batch|input(_wait)?)" N,
     Role::wait_batch, true},
    {"^_(h_?2_?d|hto_?d|h_to_d|host_to_device|(move_)?to_?(device|gpu|cuda)|copy_?to_?(device|gpu|cuda)|cuda_copy|transfer|memcpy|submit)" N,
     Role::submit, true},
    {"^_((model|net|train(ing)?)_)?(forward|backward|fwd|bwd|optimizer(_step)?|optim(izer)?_step|opt_step|(optimizer_)?zero_grad|loss(_backward)?)(_pass)?" N,
     Role::compute, true},
    // Collectives as people and frameworks name them: allreduce, all_reduce, AllGather, torch's
    // "nccl:all_reduce" / "gloo:broadcast" / "c10d::allreduce_" (Kineto), a rank's "barrier".
    {"^_((nccl|gloo|mpi|c_10_d|dist|ddp|record_param_comms)_)*(all_?reduce|all_?gather(_base|_into_tensor)?|reduce_?scatter(_base|_tensor)?|"
     "broadcast|barrier|all_?to_?all(_base)?)" N,
     Role::collective, true},
    {"^_(sync|synchronize|cuda_synchronize|device_sync(hronize)?)" N, Role::sync, true},
    {"^_(read(_file|_image|_sample|_bytes|_batch|_data)?|(file|disk)_read|read_from_(disk|storage)|load(_file|_image|_bytes)?|retrieval|"
     "fetch_sample|download|(s_3|gcs|blob)_(get|read|download))" N,
     Role::retrieval, true},
    {"^_(decode(_transform)?|(jpeg|image|img)_decode|decode_(jpeg|image|img)|transforms?|augment(ation)?|preprocess(ing)?|get_?item|load_sample|"
     "resize|(random_)?(resized_)?crop|(random_)?flip|normalize)" N,
     Role::decode, true},
    {"^_collate(_fn)?" N, Role::collate, true},
};
#undef N

Status add_rule(std::vector<RoleRule>& rules, std::string_view pattern, const std::string& domain, Role role, bool on_word_form,
                const std::string& where) {
  RoleRule r;
  r.domain = domain;
  r.role = role;
  r.on_word_form = on_word_form;
  if (Status st = NamePattern::compile(pattern, fmt::format("{}: match", where), r.pattern); !st.is_ok()) return st;
  rules.push_back(std::move(r));
  return Status::ok();
}

enum class CharKind { other, lower, upper, digit };
CharKind kind_of(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (std::islower(u)) return CharKind::lower;
  if (std::isupper(u)) return CharKind::upper;
  if (std::isdigit(u)) return CharKind::digit;
  return CharKind::other;
}
}  // namespace

std::string word_form(std::string_view name) {
  constexpr std::size_t kLongest = 256;
  if (name.size() > kLongest) return "";
  std::string out = "_";
  CharKind prev = CharKind::other;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const CharKind k = kind_of(name[i]);
    if (k == CharKind::other) {
      prev = k;
      continue;
    }
    const CharKind next = i + 1 < name.size() ? kind_of(name[i + 1]) : CharKind::other;
    const bool boundary = prev == CharKind::other || (prev == CharKind::lower && k == CharKind::upper) ||
                          (prev == CharKind::upper && k == CharKind::upper && next == CharKind::lower) ||
                          ((prev == CharKind::digit) != (k == CharKind::digit));
    if (boundary && out.back() != '_') out += '_';
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
    prev = k;
  }
  if (out.back() != '_') out += '_';
  return out;
}

RoleMap RoleMap::defaults() {
  RoleMap m;
  for (const Default& d : kDefaults) (void)add_rule(m.rules_, d.pattern, "", d.role, d.on_word_form, "built-in");
  return m;
}

Status RoleMap::parse(const std::string& text, const std::string& origin, RoleMap& out) {
  out = defaults();
  std::string safe;  // toml++ 3.3 must not see some code points (toml_guard.h)
  if (Status st = guard_toml_text(text, origin, safe); !st.is_ok()) return Status::invalid(st.message());
  toml::parse_result parsed = toml::parse(std::string_view(safe), std::string_view(origin));
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
        return Status::invalid(fmt::format("{}: role = \"{}\" is not a role (step, wait_batch, retrieval, decode, collate, submit, sync, compute, user)",
                                           where, *role));
      if (Status st = add_rule(user, *match, domain.value_or(""), *r, false, where); !st.is_ok()) return st;
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

std::optional<Role> RoleMap::match(std::string_view name, std::string_view domain) const {
  std::string words;  // made on the first word-form rule only
  bool have_words = false;
  for (const RoleRule& r : rules_) {
    if (!r.domain.empty() && r.domain != domain) continue;
    if (r.on_word_form && !have_words) {
      words = word_form(name);
      have_words = true;
    }
    if (r.pattern.found_in(r.on_word_form ? std::string_view(words) : name)) return r.role;
  }
  return std::nullopt;
}

}  // namespace stalldx::record
