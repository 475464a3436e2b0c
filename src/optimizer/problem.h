// The scaling problem of FA2 (Eq. 3) compiled from a pipeline and a workload: per DNN its
// arrival rate and every (hardware class, batch size) choice with replicas and latency, and
// the routes (execution paths) with their SLOs. Shared by FA2, its baselines and `exact`.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "model/limits.h"
#include "model/pipeline.h"
#include "model/plan.h"

namespace pipescale::optimizer {

// The most replicas a plan asks for of one task (FA2 and its baselines run a task on one
// class). A choice that would need more counts kMaxReplicas + 1, which every search avoids as
// the most expensive; a plan that still takes one is Infeasible and names the task. The largest
// maxReplicas a pipeline may set, too.
inline constexpr int kMaxReplicas = limits::kMaxReplicas;
// The most (hardware class, batch size) choices a problem compiles to, all tasks together; a
// larger one is refused as too large (the fronts, the DP and the local search all grow with
// it). 64 tasks on 4 classes at batch 1024 fit.
inline constexpr size_t kMaxChoices = 1 << 18;
// Queueing delay is capped here: a batch that fills this slowly (11.6 days) meets no SLO anyway,
// and a rate near zero would otherwise make it infinite. A status reports it, so it stays within
// what a status reads back (api/status_json.cc).
inline constexpr double kMaxQueueMs = 1e9;

// The objective of Eq. 3 compared lexicographically: fewest replicas, then the lowest cost
// (when hardware classes differ in price), then the delta tie-break toward small batches.
struct Objective {
  std::int64_t replicas = 0;
  std::int64_t cost_micro = 0;  // sum of replicas x costPerHour, in micro-dollars per hour
  std::int64_t batch_sum = 0;

  static constexpr Objective Infinite() {
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max() / 4;
    return {kMax, kMax, kMax};
  }
  bool IsInfinite() const { return replicas >= Infinite().replicas; }

  Objective& operator+=(const Objective& o) {
    replicas += o.replicas;
    cost_micro += o.cost_micro;
    batch_sum += o.batch_sum;
    return *this;
  }
  Objective& operator-=(const Objective& o) {
    replicas -= o.replicas;
    cost_micro -= o.cost_micro;
    batch_sum -= o.batch_sum;
    return *this;
  }
  friend Objective operator+(Objective x, const Objective& y) { return x += y; }
  friend Objective operator-(Objective x, const Objective& y) { return x -= y; }
  auto operator<=>(const Objective&) const = default;
};

// One way to run a DNN: the hardware class, the batch size and what follows from them.
struct Choice {
  int hardware_class = 0;
  int batch = 1;
  int replicas = 1;    // ceil(lambda / h(b)), at least one
  double exec_ms = 0;  // d(b)
  // The wait before the batch executes: (b - 1) / lambda under the papers' mean-value model;
  // filling and queueing at the SLO's percentile under the tail model (optimizer/tail.h).
  double queue_ms = 0;
  double wait_ms = 0;           // the router's budget for the batch to fill, (b - 1) / lambda
  std::int64_t cost_micro = 0;  // replicas x price

  double LatencyMs() const { return exec_ms + queue_ms; }
  Objective Cost() const { return {replicas, cost_micro, batch}; }
};

struct Dnn {
  std::string task;
  int variant = 0;              // FA2 scales the most accurate variant of each task
  double rate_rps = 0;          // lambda_s: sum of the rates of the routes through it
  double dispersion = 1;        // of its arrivals' per-second counts (TaskDispersion)
  double intensity_ms = 0;      // Int_s: mean fastest d(b) over b = 1..16 (SLA split, Eq. 4)
  std::vector<Choice> choices;  // every (class, batch), ordered by class then batch
  // The choices no other choice beats on latency and every objective term at once, latency
  // ascending. Every optimum of Eq. 3 can be built from these alone.
  std::vector<Choice> front;
  std::vector<int> successors;  // edges of the original DAG
  std::vector<int> routes;      // routes through this DNN
};

struct Route {
  std::string name;
  std::vector<int> dnns;
  double slo_ms = 0;
  double rate_rps = 0;
};

struct Problem {
  std::vector<Dnn> dnns;  // index = task index in the pipeline
  std::vector<Route> routes;
  std::vector<int> topological_order;
  // Why the problem is too large to search (more than kMaxChoices choices), or "". Then every
  // DNN has only its b = 1 choices and the optimizers answer RefuseTooLarge.
  std::string too_large;
};

using Assignment = std::vector<Choice>;  // one choice per DNN

// An optimizer's answer on a compiled problem. An infeasible problem still has an assignment:
// the best effort (every DNN at its fastest choice).
struct Solution {
  Assignment assignment;
  model::SolveStatus status = model::SolveStatus::kInfeasible;
  std::vector<std::string> notes;
};

// Precondition: the pipeline passed api validation (a DAG; every task has a variant with a
// profile; every route follows edges).
Problem Compile(const model::Pipeline& pipeline, const model::Workload& workload);

double RouteLatencyMs(const Problem& problem, const Assignment& assignment, int route);
// Whether every route's latency under `assignment` is within its SLO, widened by `band` (a share
// of it: a running plan kept within a band is held to SLO x (1 + band)).
bool MeetsSlos(const Problem& problem, const Assignment& assignment, double band = 0);
Objective Total(const Assignment& assignment);

// Every DNN at its lowest-latency choice: the plan that meets SLOs if any plan does, since
// each route's latency is a sum of independent per-DNN terms.
Assignment Fastest(const Problem& problem);

// A lower bound on the objective: each DNN at its cheapest choice that still fits every route
// when all other DNNs on the route run at their fastest.
Objective LowerBound(const Problem& problem);

// Notes naming each route that misses its SLO even at the fastest choices.
std::vector<std::string> ImpossibleRoutes(const Problem& problem);

// The answer to a problem that is too large: Infeasible, saying why, at the fastest choices.
Solution RefuseTooLarge(const Problem& problem);

// Reasons naming each task whose choice needs more than kMaxReplicas replicas.
std::vector<std::string> OverReplicaCap(const Problem& problem, const Assignment& assignment);

// The plan of a solution. A task over kMaxReplicas gets kMaxReplicas and makes it Infeasible.
model::Plan ToPlan(const model::Pipeline& pipeline, const Problem& problem,
                   const Solution& solution, const std::string& optimizer);

}  // namespace pipescale::optimizer
