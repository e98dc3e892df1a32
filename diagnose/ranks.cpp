#include "stalldx/diagnose/ranks.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

#include "rank_clocks.h"

namespace stalldx::diagnose {

Status CrossRankAccumulator::add(const RankSteps& r) {
  if (ranks_.empty()) {
    first_file_ = r.file;
    run_id_ = r.run_id;
    world_size_ = r.world_size;
  } else if (r.run_id != run_id_ || r.world_size != world_size_) {
    return Status::invalid(fmt::format("{} (run {}, {} ranks) and {} (run {}, {} ranks) come from different runs: diagnose one run's traces together",
                                       first_file_, run_id_, world_size_, r.file, r.run_id, r.world_size));
  }
  for (const RankState& seen : ranks_)
    if (seen.rank == r.rank) return Status::invalid(fmt::format("{} is rank {} again (one trace per rank)", r.file, r.rank));
  ranks_.push_back({r.rank, r.interrupted, r.steps.empty() ? -1 : r.steps.back().step, r.stopped_by_rank});
  worst_uncertainty_ns_ = std::max(worst_uncertainty_ns_, r.clock_uncertainty_ns);
  ++arrival_bases_[static_cast<std::size_t>(r.arrival)];
  if (!clocks_) clocks_ = std::make_shared<RankClocks>();
  const ClockEstimate clock = clocks_->align(r);
  const std::int64_t shift = clock.applied ? clock.shift_ns : 0;
  for (RankSteps::Step s : r.steps) {
    if (s.arrive_ns >= 0) s.arrive_ns += shift;
    if (s.step < 0) continue;
    if (static_cast<std::size_t>(s.step) >= steps_.size()) steps_.resize(static_cast<std::size_t>(s.step) + 1);
    StepState& st = steps_[static_cast<std::size_t>(s.step)];
    st.step = s.step;
    st.warmup = st.warmup || s.warmup;
    st.window_sum_ms += s.window_ms;
    ++st.windows;
    if (s.step == r.stuck_step) ++st.stuck;
    if (s.arrive_ns < 0) continue;
    ++st.arrivals;
    if (s.own_ns >= 0) st.min_own_ns = std::min(st.min_own_ns, s.own_ns);
    if (s.arrive_ns < st.first_ns) {
      st.first_ns = s.arrive_ns;
      st.first_rank = r.rank;
    }
    if (s.arrive_ns > st.last_ns) {
      st.last_ns = s.arrive_ns;
      st.last_rank = r.rank;
      st.last_verdict = s.verdict;
      st.last_evidence = s.evidence;
      st.last_own_ns = s.own_ns;
    }
    if (world_size_ <= kListedWaiters) st.arrived.push_back({s.arrive_ns, r.rank});
  }
  return Status::ok();
}

void CrossRankAccumulator::arrival_notes(std::vector<std::string>& notes) const {
  using A = RankSteps::Arrival;
  const auto n = [this](A a) { return arrival_bases_[static_cast<std::size_t>(a)]; };
  if (n(A::batch_ready) > 0)
    notes.push_back(fmt::format("{} of {} ranks recorded no collective (an all-reduce in C++, as DDP's, over gloo): their arrival at each "
                                "step's all-reduce is taken as the moment their batch was ready — in synchronous data parallel the "
                                "others wait there for the last batch", n(A::batch_ready), ranks_.size()));
  int bases = 0;
  for (int c : arrival_bases_) bases += c > 0;
  if (bases > 1)
    notes.push_back(fmt::format("the ranks' arrivals were measured in different ways (device work {}, host ranges {}, batch ready {}, none {}): "
                                "waits between ranks measured differently are approximate", n(A::device_collective), n(A::host_collective),
                                n(A::batch_ready), n(A::none)));
}

namespace {
// "0,3,5" — the first 16, then ",... (N in all)".
std::string first_ranks(const std::vector<int>& ranks) {
  std::string list;
  for (std::size_t i = 0; i < ranks.size() && i < 16; ++i) list += (list.empty() ? "" : ",") + std::to_string(ranks[i]);
  if (ranks.size() > 16) list += fmt::format(",... ({} in all)", ranks.size());
  return list;
}

// The run's straggler by the time it cost the others, not only by how many steps it held up: the rank
// the others waited for longest, when that is most of all waiting (60 %) and it held up most steps or a
// costly share of the steady time; else -1.
int run_straggler(const CrossRankReport& out, const CrossRankThresholds& th) {
  double waited_all = 0;
  const RankRow* worst = nullptr;
  for (const RankRow& r : out.ranks) {
    waited_all += r.waited_ms;
    if (r.steady_steps > 0 && r.straggler_steps > 0 && (worst == nullptr || r.waited_ms > worst->waited_ms)) worst = &r;
  }
  if (worst == nullptr) return -1;
  const bool most_steps = worst->straggler_steps >= th.consistent_share * static_cast<double>(out.steps.size());
  const bool costly = out.steady_ms > 0 && worst->waited_ms >= th.costly_share * out.steady_ms;
  constexpr double kMostOfTheWaiting = 0.6;  // ranks taking turns (each about half) name none
  return (most_steps || costly) && worst->waited_ms >= kMostOfTheWaiting * waited_all ? worst->rank : -1;
}
}  // namespace

CrossRankReport CrossRankAccumulator::finish() const {
  CrossRankReport out;
  out.world_size = world_size_;
  out.run_id = run_id_;
  std::vector<RankState> ranks = ranks_;
  std::sort(ranks.begin(), ranks.end(), [](const RankState& a, const RankState& b) { return a.rank < b.rank; });
  const RankState* dead = membership(ranks, out);
  arrival_notes(out.notes);
  if (worst_uncertainty_ns_ > 0) out.notes.push_back(fmt::format("clocks of ranks on other hosts are known to ±{:.3f} ms", worst_uncertainty_ns_ / 1e6));
  check_clocks(out);
  name_stragglers(ranks, dead, out);
  out.run_straggler = run_straggler(out, th_);
  return out;
}

// Who is here: missing ranks, ranks that left and those that stopped with them, a row per rank; the
// first rank to have stopped early (its last step the smallest) is the one the others waited for after it.
const CrossRankAccumulator::RankState* CrossRankAccumulator::membership(const std::vector<RankState>& ranks, CrossRankReport& out) const {
  {
    std::size_t k = 0;
    for (int r = 0; r < world_size_; ++r) {
      if (k < ranks.size() && ranks[k].rank == r) { ++k; continue; }
      out.missing.push_back(r);
    }
  }
  if (clocks_) out.notes.insert(out.notes.end(), clocks_->notes().begin(), clocks_->notes().end());
  if (!out.missing.empty()) {
    const std::string m = first_ranks(out.missing);
    out.notes.push_back(fmt::format("no trace for rank{} {} of {}: the others are diagnosed without it (a step where they waited "
                                    "cannot name a missing rank)", out.missing.size() == 1 ? "" : "s", m, world_size_));
  }
  // Ranks that stopped because another left (they agreed at the end of a step): who left, and when.
  {
    std::map<int, std::pair<std::vector<int>, std::int64_t>> followers;  // leaver -> (ranks that stopped with it, their last step)
    for (const RankState& r : ranks)
      if (r.stopped_by >= 0) {
        auto& f = followers[r.stopped_by];
        f.first.push_back(r.rank);
        f.second = std::max(f.second, r.last_step);
      }
    for (const auto& [leaver, f] : followers) {
      const std::string list = first_ranks(f.first);
      out.notes.push_back(fmt::format("rank {} left after step {} (its own trace and report say why: interrupted or failed); rank{} {} stopped "
                                      "with it at the same step", leaver, f.second, f.first.size() == 1 ? "" : "s", list));
    }
  }
  const RankState* dead = nullptr;
  for (const RankState& r : ranks) {
    out.ranks.push_back(RankRow{r.rank, 0, 0, 0, {}, r.interrupted});
    if (r.interrupted) {
      out.notes.push_back(fmt::format("rank {}'s run ended early (its trace is marked interrupted, last step {}): later steps the others "
                                      "waited for it are its", r.rank, r.last_step));
      if (dead == nullptr || r.last_step < dead->last_step) dead = &r;
    }
  }
  return dead;
}

void CrossRankAccumulator::check_clocks(CrossRankReport& out) const {
  // Ranks meet at each step's collective: the ones there first wait inside their step for the last, so
  // the spread of arrivals cannot much exceed the steps' windows. Far beyond them (and over a second)
  // at most steps, the traces' clocks disagree (other hosts with no offset written, a file edited):
  // arrival order, and so the stragglers, cannot be trusted.
  int compared = 0, impossible = 0;
  std::int64_t worst_spread = 0;
  for (const StepState& st : steps_) {
    if (st.step < 0 || st.warmup || st.arrivals < 2 || st.windows == 0) continue;
    ++compared;
    const std::int64_t spread = st.last_ns - st.first_ns;
    const double mean_window_ns = st.window_sum_ms / st.windows * 1e6;
    if (spread > 1'000'000'000 && static_cast<double>(spread) > 4 * mean_window_ns) {
      ++impossible;
      worst_spread = std::max(worst_spread, spread);
    }
  }
  if (compared > 0 && 2 * impossible > compared) {
    out.clocks_disagree = true;
    out.notes.push_back(fmt::format("the ranks' clocks disagree: at {} of {} steps their arrivals at the collective are up to {:.1f} s apart, "
                                    "far longer than the steps last — the stragglers named below are not to be trusted (were the traces "
                                    "written on hosts whose clock offset was not measured?)",
                                    impossible, compared, worst_spread / 1e9));
  }
}

// Per steady step: who arrived last and how long the first waited for it; the rows' counts.
void CrossRankAccumulator::name_stragglers(const std::vector<RankState>& ranks, const RankState* dead, CrossRankReport& out) const {
  int skew_steps = 0;  // arrivals apart only because the ranks left the previous all-reduce apart
  auto row = [&](int rank) -> RankRow& {
    return *std::lower_bound(out.ranks.begin(), out.ranks.end(), rank, [](const RankRow& x, int v) { return x.rank < v; });
  };
  for (const RankState& r : ranks)
    for (const StepState& st : steps_)
      if (st.step >= 0 && !st.warmup && st.step <= r.last_step) ++row(r.rank).steady_steps;
  for (const StepState& st : steps_) {
    if (st.step < 0 || st.warmup) continue;
    if (st.windows > 0) out.steady_ms += st.window_sum_ms / st.windows;
    CrossStep cs;
    cs.step = st.step;
    if (dead != nullptr && dead->last_step < st.step) {
      cs.straggler = dead->rank;
      cs.never_arrived = true;
    } else if (st.stuck > 0 && !out.missing.empty()) {
      // Ranks were stopped waiting here, and every rank with a trace arrived: the one they waited for
      // left none — it was killed in this step (the launcher then stopped the job).
      cs.straggler = out.missing.front();
      cs.never_arrived = true;
      out.notes.push_back(fmt::format("step {}: {} rank{} stopped while waiting in the all-reduce; rank {}, which left no trace, never "
                                      "arrived (it died or was killed there)", st.step, st.stuck, st.stuck == 1 ? " was" : "s were", cs.straggler));
    } else if (st.arrivals >= 2) {
      cs.waited_ms = (st.last_ns - st.first_ns) / 1e6;
      const double window = st.windows ? st.window_sum_ms / st.windows : 0;
      const double threshold = std::max(th_.straggler_ms, th_.straggler_fraction * window);
      // Ranks that left the previous all-reduce apart arrive at this one as far apart with equal steps:
      // the last is a straggler only when its own step (from leaving the previous one) was longer too.
      const bool own_known = st.last_own_ns >= 0 && st.min_own_ns != INT64_MAX;
      const bool own_longer = !own_known || (st.last_own_ns - st.min_own_ns) / 1e6 >= threshold;
      if (cs.waited_ms >= threshold && !own_longer) ++skew_steps;
      if (cs.waited_ms >= threshold && own_longer) {
        cs.straggler = st.last_rank;
        cs.straggler_verdict = st.last_verdict;
        cs.straggler_evidence = st.last_evidence;
      }
    }
    if (cs.straggler >= 0) {
      std::vector<std::pair<std::int64_t, int>> arrived = st.arrived;
      std::sort(arrived.begin(), arrived.end());
      for (const auto& [ns, rank] : arrived)
        if (rank != cs.straggler) cs.waiting.push_back(rank);
      if (!std::binary_search(out.missing.begin(), out.missing.end(), cs.straggler)) {  // a missing rank has no row
        RankRow& sr = row(cs.straggler);
        ++sr.straggler_steps;
        sr.waited_ms += cs.waited_ms;
        ++sr.verdicts_as_straggler[static_cast<std::size_t>(cs.straggler_verdict)];
      }
    } else {
      ++out.balanced_steps;
    }
    out.steps.push_back(std::move(cs));
  }
  if (skew_steps > 0)
    out.notes.push_back(fmt::format("{} step{} the ranks arrived apart only because they left the previous all-reduce as far apart (their "
                                    "own steps took as long): no straggler named there", skew_steps, skew_steps == 1 ? "" : "s"));
}

Status cross_rank(const std::vector<RankSteps>& ranks, const CrossRankThresholds& th, CrossRankReport& out) {
  if (ranks.empty()) return Status::invalid("no rank traces");
  CrossRankAccumulator acc(th);
  for (const RankSteps& r : ranks)
    if (Status st = acc.add(r); !st.is_ok()) return st;
  out = acc.finish();
  return Status::ok();
}

namespace {
Verdict main_verdict(const RankRow& r) {
  return static_cast<Verdict>(std::max_element(r.verdicts_as_straggler.begin(), r.verdicts_as_straggler.end()) - r.verdicts_as_straggler.begin());
}
std::string rank_list(const std::vector<int>& v) {
  std::string s;
  for (int r : v) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s;
}
}  // namespace


std::string run_straggler_sentence(const CrossRankReport& r, bool standin) {
  if (r.run_straggler < 0) return fmt::format("no consistent straggler: {} of {} steady steps balanced", r.balanced_steps, r.steps.size());
  const RankRow& row = *std::find_if(r.ranks.begin(), r.ranks.end(), [&](const RankRow& x) { return x.rank == r.run_straggler; });
  const bool few = row.straggler_steps * 2 < static_cast<int>(r.steps.size());
  return fmt::format("rank {} is the straggler: the others waited {:.1f} ms for it{}, on {} of {} steady steps ({}){} — fix its input "
                     "first (its own report says how); the other ranks' verdicts are not their own problem",
                     r.run_straggler, row.waited_ms,
                     r.steady_ms > 0 ? fmt::format(", {:.0f} % of the steady time", 100 * row.waited_ms / r.steady_ms) : std::string(),
                     row.straggler_steps, r.steps.size(), verdict_name(main_verdict(row), standin),
                     few ? ": few but long waits (the steps between were balanced)" : "");
}

std::string cross_rank_text(const CrossRankReport& r, bool standin, int max_step_lines) {
  std::string s = fmt::format("across ranks: {} of {} ranks, run {} | steady steps {} | with a straggler {} | balanced {}\n", r.ranks.size(),
                              r.world_size, r.run_id, r.steps.size(), r.steps.size() - static_cast<std::size_t>(r.balanced_steps), r.balanced_steps);
  for (const std::string& n : r.notes) s += "  note: " + n + "\n";
  int shown = 0;
  for (const CrossStep& c : r.steps) {
    if (c.straggler < 0) continue;
    if (shown++ >= max_step_lines) {
      s += "  ...\n";
      break;
    }
    if (c.never_arrived)
      s += fmt::format("  step {}: rank {} never arrived at the all-reduce (its run ended); ranks {} waited for it\n", c.step, c.straggler,
                       rank_list(c.waiting));
    else
      s += fmt::format("  step {}: {} waited up to {:.2f} ms in the all-reduce for rank {}: {} — {}\n", c.step,
                       c.waiting.empty() ? std::string("the other ranks")  // a large world: only the earliest is kept
                                         : fmt::format("rank{} {}", c.waiting.size() == 1 ? "" : "s", rank_list(c.waiting)),
                       c.waited_ms, c.straggler, verdict_name(c.straggler_verdict, standin), c.straggler_evidence);
  }
  s += fmt::format("  {:>5} {:>7} {:>10} {:>14}  {}\n", "rank", "steady", "straggler", "others waited", "its verdict when straggling");
  for (const RankRow& row : r.ranks)
    s += fmt::format("  {:>5} {:>7} {:>10} {:>11.1f} ms  {}{}\n", row.rank, row.steady_steps, row.straggler_steps, row.waited_ms,
                     row.straggler_steps ? verdict_name(main_verdict(row), standin) : "-", row.interrupted ? " (run ended early)" : "");
  s += "  → " + run_straggler_sentence(r, standin) + "\n";
  return s;
}

std::string cross_rank_json(const CrossRankReport& r, bool standin) {
  nlohmann::json j;
  j["world_size"] = r.world_size;
  j["run_id"] = r.run_id;
  j["missing_ranks"] = r.missing;
  j["notes"] = r.notes;
  j["run_straggler"] = r.run_straggler;
  j["balanced_steps"] = r.balanced_steps;
  j["steady_ms"] = r.steady_ms;
  for (const CrossStep& c : r.steps)
    j["steps"].push_back({{"step", c.step}, {"straggler", c.straggler}, {"never_arrived", c.never_arrived}, {"waited_ms", c.waited_ms},
                          {"waiting", c.waiting}, {"straggler_verdict", c.straggler >= 0 ? verdict_name(c.straggler_verdict, standin) : ""},
                          {"straggler_evidence", c.straggler_evidence}});
  for (const RankRow& row : r.ranks)
    j["ranks"].push_back({{"rank", row.rank}, {"steady_steps", row.steady_steps}, {"straggler_steps", row.straggler_steps},
                          {"others_waited_ms", row.waited_ms}, {"interrupted", row.interrupted},
                          {"verdict_as_straggler", row.straggler_steps ? verdict_name(main_verdict(row), standin) : ""}});
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);  // names are untrusted bytes: invalid UTF-8 becomes U+FFFD
}

}  // namespace stalldx::diagnose
