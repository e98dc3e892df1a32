// Reading a recorded process's part files (part_files.h).
#include "part_files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "stalldx/record/part_format.h"
#include "stalldx/text.h"
#include "stalldx/trace_io.h"

namespace stalldx::record {

namespace fs = std::filesystem;

namespace {

std::string unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char c = s[++i];
      out += c == 't' ? '\t' : c == 'n' ? '\n' : c;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace


bool cuda_part_window(std::string_view rest, std::int64_t& window) {
  if (rest == ".cuda.json") {
    window = -1;
    return true;
  }
  constexpr std::string_view pre = ".cuda.w", post = ".json";
  if (rest.size() <= pre.size() + post.size() || rest.substr(0, pre.size()) != pre || rest.substr(rest.size() - post.size()) != post)
    return false;
  return parse_int(rest.substr(pre.size(), rest.size() - pre.size() - post.size()), window) && window >= 0;
}

void read_names(const fs::path& path, ProcessParts& p, MergeReport& rep) {
  std::string text;
  if (!read_text_file(path.string(), text).is_ok()) {
    rep.problems.push_back(fmt::format("{}: unreadable", path.string()));
    return;
  }
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) break;  // a line cut by a kill: ignored
    std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    const auto t1 = line.find('\t');
    const auto t2 = t1 == std::string_view::npos ? t1 : line.find('\t', t1 + 1);
    if (t1 != 1 || t2 == std::string_view::npos) continue;
    const char kind = line[0];
    std::int64_t id = 0;
    if (!parse_int(line.substr(2, t2 - 2), id)) continue;
    std::string value = to_valid_utf8(unescape(line.substr(t2 + 1)), &rep.non_utf8_bytes);
    if (kind == 'n') p.names[static_cast<std::uint32_t>(id)] = std::move(value);
    else if (kind == 'd') p.domains[static_cast<std::uint32_t>(id)] = std::move(value);
    else if (kind == 't') p.thread_names[id] = std::move(value);
    else if (kind == 'h') p.info.python_hook += (p.info.python_hook.empty() ? "" : "; ") + value;
    else if (kind == 'r' && id >= 0 && id < (1 << 24)) {
      const auto tab = value.find('\t');
      int size = 0;
      if (parse_int(std::string_view(value).substr(0, tab), size) && size > id) {
        p.info.rank = static_cast<int>(id);
        p.info.world_size = size;
        p.info.job = tab == std::string::npos ? std::string() : value.substr(tab + 1);
      }
    }
  }
}

void read_proc(const fs::path& path, ProcessParts& p, MergeReport& rep) {
  std::string text;
  if (!read_text_file(path.string(), text).is_ok()) return;
  const auto t1 = text.find('\t');
  const auto t2 = t1 == std::string::npos ? t1 : text.find('\t', t1 + 1);
  if (t2 == std::string::npos) return;
  parse_int(std::string_view(text).substr(t1 + 1, t2 - t1 - 1), p.info.ppid);
  p.info.command = to_valid_utf8(text.substr(t2 + 1), &rep.non_utf8_bytes);
  while (!p.info.command.empty() && p.info.command.back() == '\n') p.info.command.pop_back();
}

bool impossible(std::int64_t begin_ns, std::int64_t end_ns, std::int64_t recording_end_ns) {
  constexpr std::int64_t kSlackNs = 60'000'000'000;  // a minute: the end is taken after the command exits
  if (begin_ns <= 0 || end_ns < begin_ns) return true;
  return recording_end_ns > 0 && end_ns > recording_end_ns + kSlackNs;
}

Status read_ranges(const fs::path& path, const ProcessParts& p, const RoleMap& roles, const MergeOptions& o, std::uint32_t lane,
                   Trace& t, MergeReport& rep, std::int64_t& tid, std::uint64_t& pthread, bool& any_cpu) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return Status::io(fmt::format("{}: cannot open", path.string()));
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) < sizeof(PartHeader)) {
    ::close(fd);
    return Status::parse(fmt::format("{}: shorter than its header", path.string()));
  }
  const std::size_t bytes = static_cast<std::size_t>(st.st_size);
  void* m = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) return Status::io(fmt::format("{}: cannot map", path.string()));
  const auto* h = static_cast<const PartHeader*>(m);
  Status result = Status::ok();
  if (h->magic != kPartMagic || h->version != kPartVersion || h->record_size != sizeof(PartRange)) {
    result = Status::parse(fmt::format("{}: not a stalldx range part (magic/version)", path.string()));
  } else {
    tid = h->tid;
    pthread = h->pthread_id;
    const std::uint64_t fits = (bytes - sizeof(PartHeader)) / sizeof(PartRange);
    const std::uint64_t n = std::min<std::uint64_t>(h->count, fits);
    rep.dropped += h->dropped;
    rep.unbalanced_pops += h->unbalanced_pops;
    const bool wrapped = h->ring != 0 && h->count > fits;
    if (wrapped) {
      rep.overwritten += h->count - fits;
      rep.ring_capacity = fits;
    }
    std::int64_t oldest_kept = INT64_MAX;
    const auto* recs = reinterpret_cast<const PartRange*>(h + 1);
    // Per distinct (name, domain) of this part: its interned id and role, matched once.
    struct Known {
      std::uint32_t id;
      Role role;
    };
    std::unordered_map<std::uint64_t, Known> known;
    for (std::uint64_t i = 0; i < n; ++i) {
      const PartRange& r = recs[i];
      if (r.begin_ns <= 0) continue;
      if (wrapped) oldest_kept = std::min(oldest_kept, r.begin_ns);
      if (o.since_ns > 0 && r.end_ns != 0 && r.end_ns < o.since_ns) continue;  // a live snapshot's older ranges
      if (impossible(r.begin_ns, r.end_ns == 0 ? r.begin_ns : r.end_ns, o.end_ns)) {  // a corrupt or forged part: dropped, counted
        rep.dropped++;
        continue;
      }
      HostRange out;
      out.begin_ns = r.begin_ns;
      out.end_ns = r.end_ns;
      if (out.end_ns == 0) {  // never closed: ends when the recording ended (its CPU fields hold begin values)
        rep.unclosed++;
        out.end_ns = std::max(o.end_ns, out.begin_ns);
      } else if (r.kind != PartRangeKind::start_end) {
        out.cpu_ns = r.cpu_ns >= 0 ? std::min(r.cpu_ns, r.end_ns - r.begin_ns) : -1;
        out.runq_ns = r.runq_ns >= 0 ? std::min(r.runq_ns, r.end_ns - r.begin_ns) : -1;
        any_cpu = any_cpu || out.cpu_ns >= 0;
      }
      if (out.end_ns < out.begin_ns) continue;
      out.thread = lane;
      out.batch = r.payload >= 0 ? r.payload : -1;
      const std::uint64_t key = (std::uint64_t{r.name} << 32) | r.domain;
      auto [it, fresh] = known.emplace(key, Known{});
      if (fresh) {
        auto nit = p.names.find(r.name);
        const std::string& name = nit == p.names.end() ? std::string() : nit->second;
        auto dit = p.domains.find(r.domain);
        const std::string domain = dit == p.domains.end() ? std::string() : dit->second;
        it->second.id = t.intern(name.empty() ? fmt::format("nvtx#{}", r.name) : name);
        const bool own = domain == kStalldxDomain && r.category >= 1 && r.category <= static_cast<std::uint32_t>(kRoleCount);
        if (!o.step.empty() && o.step.found_in(name)) it->second.role = Role::step;
        else if (own) it->second.role = static_cast<Role>(r.category - 1);  // stalldx's own NVTX (mirror, Python hook): the category is the role
        else it->second.role = roles.match(name, domain).value_or(Role::user);
      }
      out.name = it->second.id;
      out.role = it->second.role;
      t.ranges.push_back(out);
      rep.ranges++;
    }
    if (wrapped && oldest_kept != INT64_MAX) rep.ring_horizon_ns = std::max(rep.ring_horizon_ns, oldest_kept);
  }
  munmap(m, bytes);
  return result;
}


}  // namespace stalldx::record
