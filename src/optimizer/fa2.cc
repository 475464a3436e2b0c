#include "optimizer/fa2.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "common/check.h"

namespace pipescale::optimizer {
namespace {

constexpr double kEps = 1e-9;

// A path segment after the transformation: a chain of the forest with its own SLA.
struct Segment {
  std::vector<int> dnns;
  double sla_ms = 0;
};

// The transformed graph: every DNN has at most one predecessor (no ingress aggregators).
struct Forest {
  std::vector<int> parent;  // -1 for a root
  std::vector<std::vector<int>> children;
  // Per route, the positions i where the edge (dnns[i-1], dnns[i]) was removed, ascending.
  std::vector<std::vector<int>> cuts;
};

// IV.D: while some DNN has more than one predecessor, remove its incoming edge used by the
// fewest execution paths (sharing degree) and cut those paths there.
Forest Transform(const Problem& problem, std::vector<std::pair<int, int>>* removed) {
  const size_t n = problem.dnns.size();
  std::vector<int> position(n);
  for (size_t i = 0; i < n; ++i) position[problem.topological_order[i]] = static_cast<int>(i);

  std::map<std::pair<int, int>, int> sharing;
  for (const Route& route : problem.routes) {
    for (size_t i = 1; i < route.dnns.size(); ++i) ++sharing[{route.dnns[i - 1], route.dnns[i]}];
  }
  std::vector<std::vector<int>> preds(n);
  for (size_t u = 0; u < n; ++u) {
    for (int v : problem.dnns[u].successors) preds[v].push_back(static_cast<int>(u));
  }

  Forest forest;
  forest.cuts.resize(problem.routes.size());
  for (int v : problem.topological_order) {
    while (preds[v].size() > 1) {
      auto victim = std::min_element(preds[v].begin(), preds[v].end(), [&](int a, int b) {
        const int da = sharing[{a, v}];
        const int db = sharing[{b, v}];
        return da != db ? da < db : position[a] < position[b];
      });
      const int u = *victim;
      preds[v].erase(victim);
      if (removed != nullptr) removed->emplace_back(u, v);
      for (size_t r = 0; r < problem.routes.size(); ++r) {
        const std::vector<int>& d = problem.routes[r].dnns;
        for (size_t i = 1; i < d.size(); ++i) {
          if (d[i - 1] == u && d[i] == v) forest.cuts[r].push_back(static_cast<int>(i));
        }
      }
    }
  }
  forest.parent.assign(n, -1);
  forest.children.resize(n);
  for (size_t v = 0; v < n; ++v) {
    if (!preds[v].empty()) {
      forest.parent[v] = preds[v].front();
      forest.children[preds[v].front()].push_back(static_cast<int>(v));
    }
  }
  for (auto& c : forest.cuts) std::sort(c.begin(), c.end());
  return forest;
}

// Share of each piece of each cut route in the route's SLA, by intensity (Eq. 4).
std::vector<std::vector<double>> IntensityFractions(const Problem& problem, const Forest& forest) {
  std::vector<std::vector<double>> fractions(problem.routes.size());
  for (size_t r = 0; r < problem.routes.size(); ++r) {
    const std::vector<int>& d = problem.routes[r].dnns;
    std::vector<int> bounds = {0};
    bounds.insert(bounds.end(), forest.cuts[r].begin(), forest.cuts[r].end());
    bounds.push_back(static_cast<int>(d.size()));
    double total = 0;
    for (int s : d) total += problem.dnns[s].intensity_ms;
    for (size_t j = 0; j + 1 < bounds.size(); ++j) {
      double piece = 0;
      for (int i = bounds[j]; i < bounds[j + 1]; ++i) piece += problem.dnns[d[i]].intensity_ms;
      fractions[r].push_back(piece / total);
    }
  }
  return fractions;
}

std::vector<Segment> Segments(const Problem& problem, const Forest& forest,
                              const std::vector<std::vector<double>>& fractions) {
  std::vector<Segment> segments;
  for (size_t r = 0; r < problem.routes.size(); ++r) {
    const Route& route = problem.routes[r];
    std::vector<int> bounds = {0};
    bounds.insert(bounds.end(), forest.cuts[r].begin(), forest.cuts[r].end());
    bounds.push_back(static_cast<int>(route.dnns.size()));
    for (size_t j = 0; j + 1 < bounds.size(); ++j) {
      segments.push_back(
          {.dnns = {route.dnns.begin() + bounds[j], route.dnns.begin() + bounds[j + 1]},
           .sla_ms = route.slo_ms * fractions[r][j]});
    }
  }
  return segments;
}

// IV.E on the forest, with time in 1 ms slots. The paper's OPT(s, t) indexes the remaining
// budget; we index the time already spent on the segments that reach s (the elapsed time of
// their "clock"), which checks each segment against its own SLA where it ends, instead of
// giving every branch below s the budget of the tightest.
//
// Latencies become whole slots in one of two ways. Rounded up, every DP plan meets the SLAs
// with exact latencies, but a path loses up to 1 ms per DNN. Rounded down, the DP is a
// relaxation: its optimum bounds the transformed problem from below, and when its plan also
// meets the SLAs with exact latencies it is the transformed problem's optimum.
//
// The instance count of a choice is ceil(lambda / h(b)) as in Eq. 5 and 7; Algorithm 1 line 9
// writes ceil(lambda / (b * floor(t / p))), which we take for a typo: it would count time
// slots, not instances.
class SlotDp {
 public:
  SlotDp(const Problem& problem, const Forest& forest) : problem_(problem), forest_(forest) {
    const size_t n = problem.dnns.size();
    up_.resize(n);
    down_.resize(n);
    for (size_t s = 0; s < n; ++s) {
      for (const Choice& c : problem.dnns[s].front) {
        up_[s].push_back(static_cast<int>(std::ceil(c.LatencyMs() - 1e-6)));
        down_[s].push_back(static_cast<int>(std::floor(c.LatencyMs() + 1e-9)));
      }
    }
    double max_slo = 0;
    for (const Route& r : problem.routes) max_slo = std::max(max_slo, r.slo_ms);
    horizon_ = static_cast<int>(std::floor(max_slo + kEps));
    memo_.assign(n * static_cast<size_t>(horizon_ + 1), -1);
  }

  enum class Rounding { kUp, kDown };

  struct Result {
    Assignment assignment;
    std::vector<int> elapsed;  // slots spent on the parent clock when each DNN starts
  };

  // The forest optimum for these segment SLAs, or nullopt when no plan fits them. A segment
  // that starts at s but shares an edge with segments that started earlier is checked on
  // their clock; `credit[s]` slots are added to its SLA to make up for it (see SolveFa2).
  std::optional<Result> Solve(const std::vector<Segment>& segments, Rounding rounding,
                              const std::vector<int>& credit) {
    slots_ = rounding == Rounding::kUp ? &up_ : &down_;
    Prepare(segments, credit);
    Objective total;
    for (size_t s = 0; s < problem_.dnns.size(); ++s) {
      if (forest_.parent[s] >= 0) continue;
      total += Opt(static_cast<int>(s), 0);
      if (total.IsInfinite()) break;
    }
    std::optional<Result> result;
    if (!total.IsInfinite()) {
      Result r{Assignment(problem_.dnns.size()), std::vector<int>(problem_.dnns.size(), 0)};
      for (size_t s = 0; s < problem_.dnns.size(); ++s) {
        if (forest_.parent[s] < 0) Backtrack(static_cast<int>(s), 0, r);
      }
      result = std::move(r);
    }
    for (size_t i : touched_) memo_[i] = -1;
    touched_.clear();
    states_.clear();
    return result;
  }

  // The least elapsed time each DNN can see on its parent clock: every DNN above it at its
  // fastest choice, rounded down. Any plan spends at least this much, so it is a credit that
  // never lets a merged segment miss its SLA.
  std::vector<int> MinElapsed(const std::vector<Segment>& segments) {
    const size_t n = problem_.dnns.size();
    Prepare(segments, std::vector<int>(n, 0));
    std::vector<int> elapsed(n, 0);
    for (int s : problem_.topological_order) {
      for (const auto& [child, clock] : clocks_[s]) {
        elapsed[child] = ChildClock(clock, elapsed[s], down_[s][0]);
      }
    }
    return elapsed;
  }

 private:
  enum class Clock { kInherit, kRestart, kNone };
  struct End {
    double sla_ms;
    bool starts_here;
  };
  struct State {
    Objective best;
    int choice;  // index into the DNN's front; -1 when infeasible
  };

  void Prepare(const std::vector<Segment>& segments, const std::vector<int>& credit) {
    const size_t n = problem_.dnns.size();
    ends_.assign(n, {});
    clocks_.assign(n, {});
    std::vector<std::map<int, Clock>> edge(n);
    for (const Segment& seg : segments) {
      for (size_t i = 1; i < seg.dnns.size(); ++i) {
        const int u = seg.dnns[i - 1];
        const int v = seg.dnns[i];
        // A segment that started before u makes the edge inherit u's clock. Segments starting
        // at u that share such an edge are then charged u's elapsed time too: conservative.
        Clock& k = edge[u].try_emplace(v, Clock::kRestart).first->second;
        if (i > 1) k = Clock::kInherit;
      }
    }
    for (const Segment& seg : segments) {
      const int start = seg.dnns.front();
      const bool merged = seg.dnns.size() > 1 && edge[start][seg.dnns[1]] == Clock::kInherit;
      ends_[seg.dnns.back()].push_back(
          {seg.sla_ms + (merged ? credit[start] : 0), seg.dnns.size() == 1});
    }
    for (size_t s = 0; s < n; ++s) {
      for (int c : forest_.children[s]) {
        auto it = edge[s].find(c);
        clocks_[s].emplace_back(c, it == edge[s].end() ? Clock::kNone : it->second);
      }
    }
  }

  int ChildClock(Clock k, int elapsed, int slot) const {
    switch (k) {
      case Clock::kInherit:
        return elapsed + slot;
      case Clock::kRestart:
        return slot;
      case Clock::kNone:
        return 0;
    }
    return 0;
  }

  Objective Opt(int s, int elapsed) {
    const size_t key = static_cast<size_t>(s) * (horizon_ + 1) + elapsed;
    if (memo_[key] >= 0) return states_[memo_[key]].best;

    const std::vector<Choice>& front = problem_.dnns[s].front;
    State state{Objective::Infinite(), -1};
    // Choices are in ascending latency, so the first that breaks a limit ends the scan:
    // every limit only gets harder with more latency.
    for (size_t k = 0; k < front.size(); ++k) {
      const int slot = (*slots_)[s][k];
      bool fits = true;
      for (const End& end : ends_[s]) {
        if ((end.starts_here ? slot : elapsed + slot) > end.sla_ms + kEps) fits = false;
      }
      if (!fits) break;
      Objective total = front[k].Cost();
      for (const auto& [child, clock] : clocks_[s]) {
        const int child_elapsed = ChildClock(clock, elapsed, slot);
        if (child_elapsed > horizon_) {
          fits = false;
          break;
        }
        const Objective sub = Opt(child, child_elapsed);
        if (sub.IsInfinite()) {
          fits = false;
          break;
        }
        total += sub;
      }
      if (!fits) break;
      if (total < state.best) state = {total, static_cast<int>(k)};
    }
    memo_[key] = static_cast<int>(states_.size());
    states_.push_back(state);
    touched_.push_back(key);
    return state.best;
  }

  void Backtrack(int s, int elapsed, Result& result) {
    const size_t key = static_cast<size_t>(s) * (horizon_ + 1) + elapsed;
    PIPESCALE_CHECK(memo_[key] >= 0);
    const int k = states_[memo_[key]].choice;
    PIPESCALE_CHECK(k >= 0);
    result.assignment[s] = problem_.dnns[s].front[k];
    result.elapsed[s] = elapsed;
    for (const auto& [child, clock] : clocks_[s]) {
      Backtrack(child, ChildClock(clock, elapsed, (*slots_)[s][k]), result);
    }
  }

  const Problem& problem_;
  const Forest& forest_;
  std::vector<std::vector<int>> up_;    // latency slots of each front choice, rounded up
  std::vector<std::vector<int>> down_;  // and rounded down
  const std::vector<std::vector<int>>* slots_ = &up_;
  int horizon_ = 0;
  std::vector<std::vector<End>> ends_;
  std::vector<std::vector<std::pair<int, Clock>>> clocks_;
  std::vector<int> memo_;
  std::vector<State> states_;
  std::vector<size_t> touched_;
};

// Shares of route r's SLA to try for piece j (piece j + 1 takes the rest of the pair's share).
std::vector<double> SplitCandidates(const Problem& problem, const Forest& forest,
                                    const std::vector<std::vector<double>>& fractions, int r,
                                    size_t j, const Assignment* plan, int grid) {
  const Route& route = problem.routes[r];
  const double pair = fractions[r][j] + fractions[r][j + 1];
  std::vector<double> shares;
  for (int g = 1; g < grid; ++g) shares.push_back(pair * g / grid);
  if (plan == nullptr) return shares;

  // Piece j is route.dnns[begin, cut), piece j + 1 is route.dnns[cut, end).
  const int begin = j == 0 ? 0 : forest.cuts[r][j - 1];
  const int cut = forest.cuts[r][j];
  const int end =
      j + 1 < forest.cuts[r].size() ? forest.cuts[r][j + 1] : static_cast<int>(route.dnns.size());
  double left = 0, right = 0;
  for (int i = begin; i < cut; ++i) left += (*plan)[route.dnns[i]].LatencyMs();
  for (int i = cut; i < end; ++i) right += (*plan)[route.dnns[i]].LatencyMs();
  const int last = route.dnns[cut - 1];
  const int first = route.dnns[cut];
  const double total_ms = pair * route.slo_ms;
  for (const Choice& c : problem.dnns[last].front) {
    const double ms = left - (*plan)[last].LatencyMs() + c.LatencyMs();
    if (ms < total_ms) shares.push_back(ms / route.slo_ms);
  }
  for (const Choice& c : problem.dnns[first].front) {
    const double ms = right - (*plan)[first].LatencyMs() + c.LatencyMs();
    if (ms < total_ms) shares.push_back(pair - ms / route.slo_ms);
  }
  return shares;
}

// Applies the best single- or two-DNN change of choice that keeps every SLO on the original
// graph, until none improves the objective. Two-DNN moves trade latency between DNNs on a
// shared route, which is what a fixed SLA split gets wrong.
void ImproveLocally(const Problem& problem, Assignment& assignment) {
  const size_t n = problem.dnns.size();
  std::vector<double> latency(problem.routes.size());
  auto recompute = [&] {
    for (size_t r = 0; r < latency.size(); ++r) {
      latency[r] = RouteLatencyMs(problem, assignment, static_cast<int>(r));
    }
  };
  // Route latency if DNN a (and b, when b >= 0) changed latency by da (db).
  auto fits = [&](int a, double da, int b, double db) {
    for (int r : problem.dnns[a].routes) {
      double l = latency[r] + da;
      if (b >= 0 && std::find(problem.routes[r].dnns.begin(), problem.routes[r].dnns.end(), b) !=
                        problem.routes[r].dnns.end()) {
        l += db;
      }
      if (l > problem.routes[r].slo_ms + kEps) return false;
    }
    if (b >= 0) {
      for (int r : problem.dnns[b].routes) {
        const auto& d = problem.routes[r].dnns;
        if (std::find(d.begin(), d.end(), a) != d.end()) continue;  // checked above
        if (latency[r] + db > problem.routes[r].slo_ms + kEps) return false;
      }
    }
    return true;
  };
  auto share_route = [&](int a, int b) {
    for (int r : problem.dnns[a].routes) {
      const auto& d = problem.routes[r].dnns;
      if (std::find(d.begin(), d.end(), b) != d.end()) return true;
    }
    return false;
  };

  recompute();
  while (true) {
    Objective best_gain;  // strictly positive gains only
    int best_a = -1, best_b = -1;
    Choice choice_a, choice_b;
    for (size_t a = 0; a < n; ++a) {
      const Choice& cur = assignment[a];
      for (const Choice& c : problem.dnns[a].front) {
        const Objective gain = cur.Cost() - c.Cost();
        if (!(Objective{} < gain) || !(best_gain < gain)) continue;
        if (!fits(static_cast<int>(a), c.LatencyMs() - cur.LatencyMs(), -1, 0)) continue;
        best_gain = gain;
        best_a = static_cast<int>(a);
        best_b = -1;
        choice_a = c;
      }
    }
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = a + 1; b < n; ++b) {
        if (!share_route(static_cast<int>(a), static_cast<int>(b))) continue;
        const Objective now = assignment[a].Cost() + assignment[b].Cost();
        for (const Choice& ca : problem.dnns[a].front) {
          for (const Choice& cb : problem.dnns[b].front) {
            const Objective gain = now - (ca.Cost() + cb.Cost());
            if (!(Objective{} < gain) || !(best_gain < gain)) continue;
            if (!fits(static_cast<int>(a), ca.LatencyMs() - assignment[a].LatencyMs(),
                      static_cast<int>(b), cb.LatencyMs() - assignment[b].LatencyMs())) {
              continue;
            }
            best_gain = gain;
            best_a = static_cast<int>(a);
            best_b = static_cast<int>(b);
            choice_a = ca;
            choice_b = cb;
          }
        }
      }
    }
    if (best_a < 0) return;
    assignment[best_a] = choice_a;
    if (best_b >= 0) assignment[best_b] = choice_b;
    recompute();
  }
}

}  // namespace

Solution SolveFa2(const Problem& problem, const Fa2Options& options, Fa2Trace* trace) {
  Solution solution;
  solution.notes = ImpossibleRoutes(problem);
  if (!solution.notes.empty()) {
    solution.assignment = Fastest(problem);
    solution.status = model::SolveStatus::kInfeasible;
    return solution;
  }

  std::vector<std::pair<int, int>> removed;
  const Forest forest = Transform(problem, &removed);
  SlotDp dp(problem, forest);
  int runs = 0;
  // A DP plan counts only once it meets every SLO of the original graph with exact latencies.
  auto run = [&](const std::vector<std::vector<double>>& fractions,
                 const std::vector<int>& credit) -> std::optional<SlotDp::Result> {
    std::vector<Segment> segments = Segments(problem, forest, fractions);
    // Rounded down first; a plan that overshoots with exact latencies tightens every segment
    // by the overshoot and tries again, since the rounded-up DP gives away up to 1 ms per DNN.
    constexpr int kTightenings = 3;
    std::vector<Segment> tightened = segments;
    for (int attempt = 0; attempt < kTightenings; ++attempt) {
      ++runs;
      auto result = dp.Solve(tightened, SlotDp::Rounding::kDown, credit);
      if (!result) break;
      double overshoot = 0;
      for (size_t r = 0; r < problem.routes.size(); ++r) {
        overshoot =
            std::max(overshoot, RouteLatencyMs(problem, result->assignment, static_cast<int>(r)) -
                                    problem.routes[r].slo_ms);
      }
      if (overshoot <= kEps) return result;
      for (Segment& seg : tightened) seg.sla_ms -= std::ceil(overshoot);
    }
    ++runs;
    auto result = dp.Solve(segments, SlotDp::Rounding::kUp, credit);
    if (result && MeetsSlos(problem, result->assignment)) return result;
    return std::nullopt;
  };
  auto better = [](const std::optional<SlotDp::Result>& x, const std::optional<SlotDp::Result>& y) {
    return x && (!y || Total(x->assignment) < Total(y->assignment));
  };

  std::vector<std::vector<double>> fractions = IntensityFractions(problem, forest);
  // Which segments share clocks depends only on the cuts, not on the split fractions.
  const std::vector<int> safe_credit = dp.MinElapsed(Segments(problem, forest, fractions));
  std::optional<SlotDp::Result> best = run(fractions, safe_credit);
  Objective paper = Objective::Infinite();
  if (trace != nullptr) {  // the paper's algorithm alone: Eq. 4's split, no clock credit
    auto plain = run(fractions, std::vector<int>(problem.dnns.size(), 0));
    if (plain) paper = Total(plain->assignment);
  }

  // Beyond the paper, two repairs alternate while either pays off; `run` checks every plan
  // against the original graph, so both may be optimistic.
  //
  // Split repair: coordinate search over the boundary between adjacent pieces of each cut
  // route. Candidates: a 5% grid, and the boundaries at which the DNN on either side of the
  // cut switches to another choice with the rest of the plan as it is (a narrow window of good
  // splits falls between grid points, never between these).
  //
  // Clock credit: a path that starts at s while others pass through s is checked on the
  // others' clock, as if it had already spent their elapsed time; the safe credit gives back
  // only the least of it. Crediting the elapsed time the best plan really has at s lets the
  // DP see the slack such paths have.
  const bool any_cut = std::any_of(forest.cuts.begin(), forest.cuts.end(),
                                   [](const std::vector<int>& c) { return !c.empty(); });
  constexpr int kGrid = 20;
  constexpr int kRounds = 4;
  for (int round = 0; options.repair_split && round < kRounds; ++round) {
    bool improved = false;
    for (size_t r = 0; any_cut && r < fractions.size(); ++r) {
      for (size_t j = 0; j + 1 < fractions[r].size(); ++j) {
        const std::vector<int> credit = best ? best->elapsed : safe_credit;
        for (double share : SplitCandidates(problem, forest, fractions, static_cast<int>(r), j,
                                            best ? &best->assignment : nullptr, kGrid)) {
          std::vector<std::vector<double>> trial = fractions;
          trial[r][j] = share;
          trial[r][j + 1] = fractions[r][j] + fractions[r][j + 1] - share;
          std::optional<SlotDp::Result> candidate = run(trial, credit);
          if (better(candidate, best)) {
            best = std::move(candidate);
            fractions = std::move(trial);
            improved = true;
          }
        }
      }
    }
    if (best) {
      std::optional<SlotDp::Result> candidate = run(fractions, best->elapsed);
      if (better(candidate, best)) {
        best = std::move(candidate);
        improved = true;
      }
    }
    if (!improved) break;
  }

  // Feasibility is decided exactly above, so the fastest plan is a valid start when the
  // transformed problem admits none.
  Assignment assignment = best ? best->assignment : Fastest(problem);
  PIPESCALE_CHECK(MeetsSlos(problem, assignment));
  if (options.local_improvement) ImproveLocally(problem, assignment);

  solution.assignment = std::move(assignment);
  solution.status = Total(solution.assignment) == LowerBound(problem)
                        ? model::SolveStatus::kOptimal
                        : model::SolveStatus::kFeasible;
  for (const auto& [u, v] : removed) {
    solution.notes.push_back("graph transformation removed edge " + problem.dnns[u].task + " -> " +
                             problem.dnns[v].task);
  }
  if (!best) {
    solution.notes.emplace_back(
        "the transformed graph admitted no plan for any SLA split; started from the fastest plan");
  }
  if (trace != nullptr) {
    trace->removed_edges = std::move(removed);
    trace->dp_runs = runs;
    trace->paper_objective = paper;
  }
  return solution;
}

}  // namespace pipescale::optimizer
