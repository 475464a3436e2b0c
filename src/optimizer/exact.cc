#include "optimizer/exact.h"

#include <algorithm>
#include <limits>

namespace pipescale::optimizer {
namespace {

constexpr double kEps = 1e-9;

class BranchAndBound {
 public:
  BranchAndBound(const Problem& problem, const ExactOptions& options)
      : problem_(problem),
        max_nodes_(options.max_nodes),
        max_work_(options.max_work),
        order_(problem.topological_order) {
    const size_t n = problem.dnns.size();
    // DNNs on many routes first: they constrain the most, so pruning starts early.
    std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) {
      return problem.dnns[a].routes.size() > problem.dnns[b].routes.size();
    });
    partial_.assign(problem.routes.size(), 0);
    remaining_fastest_.assign(problem.routes.size(), 0);
    for (size_t r = 0; r < problem.routes.size(); ++r) {
      for (int d : problem.routes[r].dnns) {
        remaining_fastest_[r] += problem.dnns[d].front.front().LatencyMs();
      }
    }
    // Minimum objective over each front's prefix [0, k]: the cheapest choice within a latency.
    prefix_min_.resize(n);
    for (size_t s = 0; s < n; ++s) {
      Objective m = Objective::Infinite();
      for (const Choice& c : problem.dnns[s].front) {
        m = std::min(m, c.Cost());
        prefix_min_[s].push_back(m);
      }
    }
    current_.resize(n);
  }

  Solution Run() {
    Search(0, Objective{});
    Solution solution;
    if (best_cost_.IsInfinite()) {
      solution.assignment = Fastest(problem_);
      solution.status = model::SolveStatus::kInfeasible;
      solution.notes = ImpossibleRoutes(problem_);
      if (OutOfBudget()) solution.status = model::SolveStatus::kTimeLimit;
      return solution;
    }
    solution.assignment = best_;
    solution.status = OutOfBudget() ? model::SolveStatus::kTimeLimit : model::SolveStatus::kOptimal;
    return solution;
  }

 private:
  // Largest latency DNN s may take given the assigned DNNs and the fastest choice for the rest.
  double Allowance(int s) const {
    double allowance = std::numeric_limits<double>::infinity();
    const double fastest = problem_.dnns[s].front.front().LatencyMs();
    for (int r : problem_.dnns[s].routes) {
      allowance = std::min(
          allowance, problem_.routes[r].slo_ms - partial_[r] - (remaining_fastest_[r] - fastest));
    }
    return allowance;
  }

  // Index of the last front choice within `allowance`, or -1.
  int LastWithin(int s, double allowance) const {
    const auto& front = problem_.dnns[s].front;
    auto it = std::upper_bound(front.begin(), front.end(), allowance + kEps,
                               [](double a, const Choice& c) { return a < c.LatencyMs(); });
    return static_cast<int>(it - front.begin()) - 1;
  }

  bool OutOfBudget() const { return nodes_ > max_nodes_ || work_ > max_work_; }

  // Lower bound on the objective of DNNs order_[depth..].
  Objective Bound(size_t depth) {
    Objective bound;
    work_ += static_cast<std::int64_t>(order_.size() - depth);
    for (size_t i = depth; i < order_.size(); ++i) {
      const int s = order_[i];
      const int k = LastWithin(s, Allowance(s));
      if (k < 0) return Objective::Infinite();
      bound += prefix_min_[s][k];
    }
    return bound;
  }

  void Search(size_t depth, const Objective& cost) {
    ++nodes_;
    if (OutOfBudget()) return;
    if (depth == order_.size()) {
      if (cost < best_cost_) {
        best_cost_ = cost;
        best_ = current_;
      }
      return;
    }
    const int s = order_[depth];
    const auto& front = problem_.dnns[s].front;
    const int last = LastWithin(s, Allowance(s));
    const double fastest = front.front().LatencyMs();
    // Cheapest first (the end of the front), so good incumbents come early.
    for (int k = last; k >= 0; --k) {
      const Choice& c = front[k];
      const Objective with = cost + c.Cost();
      if (!(with < best_cost_)) continue;
      for (int r : problem_.dnns[s].routes) {
        partial_[r] += c.LatencyMs();
        remaining_fastest_[r] -= fastest;
      }
      const Objective bound = Bound(depth + 1);
      if (!bound.IsInfinite() && with + bound < best_cost_) {
        current_[s] = c;
        Search(depth + 1, with);
      }
      for (int r : problem_.dnns[s].routes) {
        partial_[r] -= c.LatencyMs();
        remaining_fastest_[r] += fastest;
      }
      if (OutOfBudget()) return;
    }
  }

  const Problem& problem_;
  std::int64_t max_nodes_;
  std::int64_t max_work_;
  std::int64_t nodes_ = 0;
  std::int64_t work_ = 0;
  std::vector<int> order_;
  std::vector<double> partial_;
  std::vector<double> remaining_fastest_;
  std::vector<std::vector<Objective>> prefix_min_;
  Assignment current_;
  Assignment best_;
  Objective best_cost_ = Objective::Infinite();
};

}  // namespace

Solution SolveExact(const Problem& problem, const ExactOptions& options) {
  if (!problem.too_large.empty()) return RefuseTooLarge(problem);
  return BranchAndBound(problem, options).Run();
}

}  // namespace pipescale::optimizer
