#include "optimizer/fa2.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "common/check.h"
#include "common/strings.h"

namespace pipescale::optimizer {
namespace {

constexpr double kEps = 1e-9;

// FA2's budgets, so that its time and memory stay bounded whatever the pipeline. The DP table
// has at most kMaxDpCells (DNN, elapsed slot) states, and one run scans at most kMaxDpScan
// front choices; where the SLOs and the fronts would need more, a slot stands for more than
// 1 ms (rounded the same two ways, so plans stay verified). All DP runs of one solve share
// kMaxDpWork front choices scanned, and the local search kMaxLocalWork candidate moves; past
// either, the best plan so far is the answer, with status TimeLimit. The shipped examples use
// a small fraction of each.
constexpr double kMaxDpCells = 2e6;
constexpr double kMaxDpScan = 2e7;
constexpr std::int64_t kMaxDpWork = 300'000'000;
constexpr std::int64_t kMaxLocalWork = 50'000'000;

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

// Each segment's SLA under a split: its route's SLO times its share in `fractions`. The
// segments are in Segments' order, route by route; a split changes only these.
void SetSlas(const Problem& problem, const std::vector<std::vector<double>>& fractions,
             std::vector<Segment>& segments) {
  size_t i = 0;
  for (size_t r = 0; r < problem.routes.size(); ++r) {
    for (double share : fractions[r]) {
      PIPESCALE_CHECK(i < segments.size());  // one share per segment, in the routes' order
      segments[i++].sla_ms = problem.routes[r].slo_ms * share;
    }
  }
  PIPESCALE_CHECK(i == segments.size());
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
          {.dnns = {route.dnns.begin() + bounds[j], route.dnns.begin() + bounds[j + 1]}});
    }
  }
  SetSlas(problem, fractions, segments);
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
    double max_slo = 0;
    for (const Route& r : problem.routes) max_slo = std::max(max_slo, r.slo_ms);
    slot_ms_ = SlotMs(problem, max_slo);
    horizon_ = slot_ms_ > 0 ? static_cast<int>(std::floor(max_slo / slot_ms_ + kEps)) : 0;
    // Far beyond every SLA and the horizon (at most kMaxDpCells slots each), so that capping
    // changes no comparison and sums of slots stay ints.
    const auto slots = [](double x) { return static_cast<int>(std::min(x, 1e9)); };
    up_.resize(n);
    down_.resize(n);
    cheapest_.resize(n);
    for (size_t s = 0; s < n; ++s) {
      const std::vector<Choice>& front = problem.dnns[s].front;
      for (size_t k = 0; k < front.size(); ++k) {
        up_[s].push_back(slots(std::ceil(front[k].LatencyMs() / slot_ms_ - 1e-6)));
        down_[s].push_back(slots(std::floor(front[k].LatencyMs() / slot_ms_ + 1e-9)));
        const bool cheaper = k == 0 || front[k].Cost() < front[cheapest_[s].back()].Cost();
        cheapest_[s].push_back(cheaper ? static_cast<int>(k) : cheapest_[s].back());
      }
    }
    if (slot_ms_ > 0) memo_.assign(n * static_cast<size_t>(horizon_ + 1), -1);
  }

  // The slot width: 1 ms unless the table or its scans would outgrow their budgets; 0 when
  // even two slots would (the DP is then skipped, see Solve).
  static double SlotMs(const Problem& problem, double max_slo) {
    double front = 0;
    for (const Dnn& d : problem.dnns) front += static_cast<double>(d.front.size());
    const double n = std::max<double>(1, static_cast<double>(problem.dnns.size()));
    const double slots = std::floor(std::min(kMaxDpCells / n, kMaxDpScan / std::max(1.0, front)));
    if (slots < 2) return 0;
    if (std::floor(max_slo + kEps) + 1 <= slots) return 1;
    return max_slo / (slots - 1);
  }

  double slot_ms() const { return slot_ms_; }
  bool exhausted() const { return work_ > kMaxDpWork; }

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
    if (slot_ms_ == 0) work_ = kMaxDpWork + 1;  // too large for any table: the budget is out
    if (exhausted()) return std::nullopt;
    slots_ = rounding == Rounding::kUp ? &up_ : &down_;
    Prepare(segments, credit);
    work_ += static_cast<std::int64_t>(problem_.dnns.size() + segments.size());
    Objective total;
    for (size_t s = 0; s < problem_.dnns.size(); ++s) {
      if (forest_.parent[s] >= 0) continue;
      total += Opt(static_cast<int>(s), 0);
      if (total.IsInfinite()) break;
    }
    std::optional<Result> result;
    if (!total.IsInfinite() && !exhausted()) {
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

  // What a run with these segment SLAs and clock credit depends on: each DNN's limits in whole
  // slots (the clocks depend only on the cuts, the same for every split).
  std::vector<int> Limits(const std::vector<Segment>& segments, const std::vector<int>& credit) {
    Prepare(segments, credit);
    std::vector<int> out;
    out.reserve(2 * limit_.size());
    for (const Limit& l : limit_) {
      out.push_back(l.start);
      out.push_back(l.inherited);
    }
    return out;
  }

  // A bound no run on the segments of the last Limits call can beat, with any rounding or
  // tightening: each DNN at its cheapest choice within its own limits alone (the order of
  // objectives is kept by sums, so a sum of minima is at most any feasible sum).
  Objective LowerBound() const {
    Objective bound;
    for (size_t s = 0; s < limit_.size(); ++s) {
      const std::vector<int>& slots = down_[s];
      const int most = std::min(limit_[s].start, limit_[s].inherited);
      const auto fit = std::upper_bound(slots.begin(), slots.end(), most) - slots.begin();
      if (fit == 0) return Objective::Infinite();
      bound += problem_.dnns[s].front[cheapest_[s][fit - 1]].Cost();
    }
    return bound;
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
  // The most slots a DNN may end at, over the segments that end at it: those that start at it
  // count its own slot, the others its parent clock's elapsed slots plus its own.
  // Past any count of slots (capped at 1e9), with room to add an elapsed count.
  static constexpr int kNoLimit = std::numeric_limits<int>::max() / 2;
  struct Limit {
    int start = kNoLimit;
    int inherited = kNoLimit;
  };

  // An integer count of slots fits a segment's SLA in slots when it is at most this.
  static int LimitSlots(double sla_slots) {
    return static_cast<int>(
        std::clamp(std::floor(sla_slots + kEps), -1.0, static_cast<double>(kNoLimit)));
  }
  struct State {
    Objective best;
    int choice;  // index into the DNN's front; -1 when infeasible
  };

  void Prepare(const std::vector<Segment>& segments, const std::vector<int>& credit) {
    const size_t n = problem_.dnns.size();
    // Called for every split weighed: the per-DNN lists keep their storage between calls.
    clocks_.resize(n);
    edges_.resize(n);
    for (size_t s = 0; s < n; ++s) {
      clocks_[s].clear();
      edges_[s].clear();
    }
    for (const Segment& seg : segments) {
      for (size_t i = 1; i < seg.dnns.size(); ++i) {
        const int u = seg.dnns[i - 1];
        const int v = seg.dnns[i];
        // A segment that started before u makes the edge inherit u's clock. Segments starting
        // at u that share such an edge are then charged u's elapsed time too: conservative.
        Clock* k = EdgeClock(u, v);
        if (k == nullptr) k = &edges_[u].emplace_back(v, Clock::kRestart).second;
        if (i > 1) *k = Clock::kInherit;
      }
    }
    limit_.assign(n, {});
    for (const Segment& seg : segments) {
      const int start = seg.dnns.front();
      const bool merged = seg.dnns.size() > 1 && *EdgeClock(start, seg.dnns[1]) == Clock::kInherit;
      // In slots: x / 1 is x exactly, so 1 ms slots count as they always did.
      const int limit = LimitSlots(seg.sla_ms / slot_ms_ + (merged ? credit[start] : 0));
      Limit& l = limit_[seg.dnns.back()];
      int& bound = seg.dnns.size() == 1 ? l.start : l.inherited;
      bound = std::min(bound, limit);
    }
    for (size_t s = 0; s < n; ++s) {
      for (int c : forest_.children[s]) {
        const Clock* k = EdgeClock(static_cast<int>(s), c);
        clocks_[s].emplace_back(c, k == nullptr ? Clock::kNone : *k);
      }
    }
  }

  // The clock on the edge u -> v that the segments of the last Prepare run along, or null.
  Clock* EdgeClock(int u, int v) {
    for (auto& [child, clock] : edges_[u]) {
      if (child == v) return &clock;
    }
    return nullptr;
  }

  static int ChildClock(Clock k, int elapsed, int slot) {
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
    if (exhausted()) return Objective::Infinite();  // Solve discards this run
    if (clocks_[s].empty()) return Remember(key, Leaf(s, elapsed));

    const std::vector<Choice>& front = problem_.dnns[s].front;
    State state{Objective::Infinite(), -1};
    // Choices are in ascending latency, so the first that breaks a limit ends the scan:
    // every limit only gets harder with more latency.
    for (size_t k = 0; k < front.size(); ++k) {
      ++work_;
      const int slot = (*slots_)[s][k];
      if (slot > limit_[s].start || elapsed + slot > limit_[s].inherited) break;
      bool fits = true;
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
    return Remember(key, state);
  }

  // A DNN without children (most of them, and most of the DP's work): its best is the cheapest
  // choice within its limits, and those are a prefix of its front. Counted as the scan would be.
  State Leaf(int s, int elapsed) {
    const std::vector<int>& slots = (*slots_)[s];
    const int bound = std::min(limit_[s].start, limit_[s].inherited - elapsed);
    const auto fit =
        static_cast<size_t>(std::upper_bound(slots.begin(), slots.end(), bound) - slots.begin());
    work_ += static_cast<std::int64_t>(std::min(fit + 1, slots.size()));
    if (fit == 0) return {Objective::Infinite(), -1};
    const int k = cheapest_[s][fit - 1];
    return {problem_.dnns[s].front[k].Cost(), k};
  }

  Objective Remember(size_t key, const State& state) {
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
  // The first cheapest of each front's first k + 1 choices, by k.
  std::vector<std::vector<int>> cheapest_;
  const std::vector<std::vector<int>>* slots_ = &up_;
  double slot_ms_ = 1;
  int horizon_ = 0;
  std::int64_t work_ = 0;  // front choices scanned over all runs
  std::vector<Limit> limit_;
  std::vector<std::vector<std::pair<int, Clock>>> clocks_;
  std::vector<std::vector<std::pair<int, Clock>>> edges_;  // Prepare's, by parent: (child, clock)
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

// Local search on the original graph: applies the best change of one DNN's choice, or of two
// DNNs' sharing a route, that keeps every SLO, until none improves the objective. Two-DNN
// moves trade latency between DNNs on a shared route, which is what a fixed SLA split gets
// wrong.
class LocalSearch {
 public:
  LocalSearch(const Problem& problem, Assignment& assignment)
      : problem_(problem), assignment_(assignment), latency_(problem.routes.size()) {
    const size_t n = problem.dnns.size();
    share_.assign(n * n, false);
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = a + 1; b < n; ++b) {
        share_[a * n + b] = ShareRoute(static_cast<int>(a), static_cast<int>(b));
      }
    }
  }

  void Run() {
    const size_t n = problem_.dnns.size();
    while (!exhausted()) {
      Recompute();
      Move best;
      for (size_t a = 0; a < n && !exhausted(); ++a) {
        ConsiderSingle(static_cast<int>(a), best);
        for (size_t b = a + 1; b < n && !exhausted(); ++b) {
          if (share_[a * n + b]) ConsiderPair(static_cast<int>(a), static_cast<int>(b), best);
        }
      }
      // A move found before the budget ran out is as valid as any: it keeps every SLO.
      if (best.a < 0) return;
      assignment_[best.a] = best.choice_a;
      if (best.b >= 0) assignment_[best.b] = best.choice_b;
    }
  }

  bool exhausted() const { return work_ > kMaxLocalWork; }

 private:
  struct Move {
    Objective gain;  // only strictly positive gains are taken
    int a = -1;
    int b = -1;  // -1 for a single-DNN move
    Choice choice_a;
    Choice choice_b;
  };

  void Recompute() {
    for (size_t r = 0; r < latency_.size(); ++r) {
      latency_[r] = RouteLatencyMs(problem_, assignment_, static_cast<int>(r));
    }
  }

  bool OnRoute(int route, int dnn) const {
    const auto& d = problem_.routes[route].dnns;
    return std::find(d.begin(), d.end(), dnn) != d.end();
  }

  bool ShareRoute(int a, int b) const {
    const auto& routes = problem_.dnns[a].routes;
    return std::any_of(routes.begin(), routes.end(), [&](int r) { return OnRoute(r, b); });
  }

  // Whether every route still meets its SLO when DNN a's latency changes by da and, when
  // b >= 0, DNN b's by db.
  bool Fits(int a, double da, int b, double db) const {
    auto within = [&](int r, double delta) {
      return latency_[r] + delta <= problem_.routes[r].slo_ms + kEps;
    };
    for (int r : problem_.dnns[a].routes) {
      if (!within(r, da + (b >= 0 && OnRoute(r, b) ? db : 0))) return false;
    }
    if (b < 0) return true;
    return std::ranges::all_of(problem_.dnns[b].routes,
                               [&](int r) { return OnRoute(r, a) || within(r, db); });
  }

  void ConsiderSingle(int a, Move& best) {
    const Choice& now = assignment_[a];
    work_ += static_cast<std::int64_t>(problem_.dnns[a].front.size());
    for (const Choice& c : problem_.dnns[a].front) {
      const Objective gain = now.Cost() - c.Cost();
      if (!(best.gain < gain) || !(Objective{} < gain)) continue;
      if (Fits(a, c.LatencyMs() - now.LatencyMs(), -1, 0)) best = {gain, a, -1, c, {}};
    }
  }

  void ConsiderPair(int a, int b, Move& best) {
    const Choice& now_a = assignment_[a];
    const Choice& now_b = assignment_[b];
    const Objective now = now_a.Cost() + now_b.Cost();
    work_ +=
        static_cast<std::int64_t>(problem_.dnns[a].front.size() * problem_.dnns[b].front.size());
    for (const Choice& ca : problem_.dnns[a].front) {
      for (const Choice& cb : problem_.dnns[b].front) {
        const Objective gain = now - (ca.Cost() + cb.Cost());
        if (!(best.gain < gain) || !(Objective{} < gain)) continue;
        if (Fits(a, ca.LatencyMs() - now_a.LatencyMs(), b, cb.LatencyMs() - now_b.LatencyMs())) {
          best = {gain, a, b, ca, cb};
        }
      }
    }
  }

  const Problem& problem_;
  Assignment& assignment_;
  std::vector<double> latency_;
  std::vector<bool> share_;  // [a * n + b], a < b: the DNNs share a route
  std::int64_t work_ = 0;    // candidate moves weighed
};

// The DP on the transformed graph plus the two repairs that go beyond the paper. Every plan it
// keeps meets every SLO of the original graph with exact latencies.
class Fa2Search {
 public:
  Fa2Search(const Problem& problem, const Forest& forest)
      : problem_(problem),
        forest_(forest),
        dp_(problem, forest),
        fractions_(IntensityFractions(problem, forest)),
        // Which segments share clocks depends only on the cuts, not on the split fractions.
        safe_credit_(dp_.MinElapsed(Segments(problem, forest, fractions_))) {}

  // The DP with Eq. 4's split (and the safe clock credit).
  void Start() { best_ = Try(fractions_, safe_credit_); }

  // The paper's algorithm alone: Eq. 4's split, no clock credit. For traces only.
  Objective PaperObjective() {
    auto plain =
        Run(IntensityFractions(problem_, forest_), std::vector<int>(problem_.dnns.size(), 0));
    return plain ? Total(plain->assignment) : Objective::Infinite();
  }

  // Alternates the split repair and the clock credit while either pays off.
  void Repair() {
    constexpr int kRounds = 4;
    for (int round = 0; round < kRounds; ++round) {
      const bool split = RepairSplit();
      const bool credit = best_ && Offer(Try(fractions_, best_->elapsed));
      if (!split && !credit) return;
    }
  }

  const std::optional<SlotDp::Result>& best() const { return best_; }
  int runs() const { return runs_; }
  bool exhausted() const { return dp_.exhausted(); }
  double slot_ms() const { return dp_.slot_ms(); }

 private:
  // A DP plan counts only once it meets every SLO of the original graph with exact latencies.
  // Rounded down first; a plan that overshoots tightens every segment by the overshoot and
  // tries again, since the rounded-up DP gives away up to 1 ms per DNN.
  std::optional<SlotDp::Result> Run(const std::vector<std::vector<double>>& fractions,
                                    const std::vector<int>& credit) {
    return Run(Segments(problem_, forest_, fractions), credit);
  }

  // Run, unless a split with the same limits in whole slots was tried: the DP sees only those,
  // so its plan was offered already. Many candidate shares of a split floor to the same slots.
  std::optional<SlotDp::Result> Try(const std::vector<std::vector<double>>& fractions,
                                    const std::vector<int>& credit) {
    // The cuts fix the segments' DNNs; a split sets only their SLAs, in a list kept for it.
    if (split_.empty()) split_ = Segments(problem_, forest_, fractions);
    SetSlas(problem_, fractions, split_);
    const std::vector<Segment>& segments = split_;
    if (!tried_.insert(dp_.Limits(segments, credit)).second) return std::nullopt;
    // Nor can a split whose bound the best plan already meets give a better one.
    if (best_ && !(dp_.LowerBound() < Total(best_->assignment))) return std::nullopt;
    return Run(segments, credit);
  }

  std::optional<SlotDp::Result> Run(const std::vector<Segment>& segments,
                                    const std::vector<int>& credit) {
    constexpr int kTightenings = 3;
    std::vector<Segment>& tightened = tightened_;  // assigned in place: its lists keep storage
    tightened = segments;
    for (int attempt = 0; attempt < kTightenings; ++attempt) {
      ++runs_;
      auto result = dp_.Solve(tightened, SlotDp::Rounding::kDown, credit);
      if (!result) break;
      const double overshoot = Overshoot(result->assignment);
      if (overshoot <= kEps) return result;
      for (Segment& seg : tightened) seg.sla_ms -= std::ceil(overshoot);
    }
    ++runs_;
    auto result = dp_.Solve(segments, SlotDp::Rounding::kUp, credit);
    if (result && MeetsSlos(problem_, result->assignment)) return result;
    return std::nullopt;
  }

  // Largest amount by which a route exceeds its SLO (<= 0 when all meet them).
  double Overshoot(const Assignment& assignment) const {
    double overshoot = -std::numeric_limits<double>::infinity();
    for (size_t r = 0; r < problem_.routes.size(); ++r) {
      overshoot = std::max(overshoot, RouteLatencyMs(problem_, assignment, static_cast<int>(r)) -
                                          problem_.routes[r].slo_ms);
    }
    return overshoot;
  }

  bool Offer(std::optional<SlotDp::Result> candidate) {
    if (!candidate || (best_ && !(Total(candidate->assignment) < Total(best_->assignment)))) {
      return false;
    }
    best_ = std::move(candidate);
    return true;
  }

  // Split repair: coordinate search over the boundary between adjacent pieces of each cut
  // route, with the clock credit of the best plan so far.
  bool RepairSplit() {
    constexpr int kGrid = 20;
    bool improved = false;
    for (size_t r = 0; r < fractions_.size(); ++r) {
      for (size_t j = 0; j + 1 < fractions_[r].size(); ++j) {
        const std::vector<int> credit = best_ ? best_->elapsed : safe_credit_;
        for (double share : SplitCandidates(problem_, forest_, fractions_, static_cast<int>(r), j,
                                            best_ ? &best_->assignment : nullptr, kGrid)) {
          if (dp_.exhausted()) return improved;
          std::vector<std::vector<double>> trial = fractions_;
          trial[r][j] = share;
          trial[r][j + 1] = fractions_[r][j] + fractions_[r][j + 1] - share;
          if (Offer(Try(trial, credit))) {
            fractions_ = std::move(trial);
            improved = true;
          }
        }
      }
    }
    return improved;
  }

  const Problem& problem_;
  const Forest& forest_;
  SlotDp dp_;
  std::vector<std::vector<double>> fractions_;
  std::vector<int> safe_credit_;
  std::optional<SlotDp::Result> best_;
  std::set<std::vector<int>> tried_;  // SlotDp::Limits of every split tried
  std::vector<Segment> split_;        // Try's segments, their SLAs set per split
  std::vector<Segment> tightened_;    // Run's, tightened per attempt
  int runs_ = 0;
};

// What the solve did beyond the plan: removed edges, a coarser DP, a budget that ran out.
std::vector<std::string> SearchNotes(const Problem& problem, const Fa2Search& search,
                                     const std::vector<std::pair<int, int>>& removed, bool cut) {
  std::vector<std::string> notes;
  notes.reserve(removed.size() + 2);
  for (const auto& [u, v] : removed) {
    notes.push_back("graph transformation removed edge " + problem.dnns[u].task + " -> " +
                    problem.dnns[v].task);
  }
  if (!search.best() && !search.exhausted()) {
    notes.emplace_back(
        "the transformed graph admitted no plan for any SLA split; started from the fastest plan");
  }
  if (search.slot_ms() > 1) {
    notes.push_back(
        StrFormat("the DP counted time in %.4g ms slots: 1 ms slots over these SLOs "
                  "and choices would outgrow its table",
                  search.slot_ms()));
  }
  if (cut) notes.emplace_back("fa2 stopped at its search budget; the plan is the best it found");
  return notes;
}

}  // namespace

Solution SolveFa2(const Problem& problem, const Fa2Options& options, Fa2Trace* trace) {
  if (!problem.too_large.empty()) return RefuseTooLarge(problem);
  Solution solution;
  solution.notes = ImpossibleRoutes(problem);
  if (!solution.notes.empty()) {
    solution.assignment = Fastest(problem);
    solution.status = model::SolveStatus::kInfeasible;
    return solution;
  }

  std::vector<std::pair<int, int>> removed;
  const Forest forest = Transform(problem, &removed);
  Fa2Search search(problem, forest);
  search.Start();
  if (trace != nullptr) trace->paper_objective = search.PaperObjective();
  // Beyond the paper: repair the SLA split where Eq. 4's proportional split loses, and credit
  // paths that start mid-tree with the slack the paper's DP withholds from them.
  if (options.repair_split) search.Repair();

  // Feasibility was decided exactly above, so the fastest plan is a valid start when the
  // transformed graph admits no plan.
  Assignment assignment = search.best() ? search.best()->assignment : Fastest(problem);
  PIPESCALE_CHECK(MeetsSlos(problem, assignment));
  LocalSearch local(problem, assignment);
  if (options.local_improvement) local.Run();

  solution.assignment = std::move(assignment);
  const bool cut = search.exhausted() || local.exhausted();
  solution.status = Total(solution.assignment) == LowerBound(problem) ? model::SolveStatus::kOptimal
                    : cut ? model::SolveStatus::kTimeLimit
                          : model::SolveStatus::kFeasible;
  solution.notes = SearchNotes(problem, search, removed, cut);
  if (trace != nullptr) {
    trace->removed_edges = std::move(removed);
    trace->dp_runs = search.runs();
    trace->slot_ms = search.slot_ms();
  }
  return solution;
}

}  // namespace pipescale::optimizer
