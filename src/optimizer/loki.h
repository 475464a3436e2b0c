// Loki (HPDC'24): scale the most accurate variants out first (hardware scaling); once the
// cluster is full, trade accuracy for throughput with less accurate variants (accuracy
// scaling); both as MILPs solved by CBC. Then MostAccurateFirst routing tables from the plan.
#pragma once

#include <map>
#include <optional>
#include <set>

#include "model/pipeline.h"
#include "model/plan.h"
#include "optimizer/milp.h"

namespace pipescale::optimizer {

struct LokiOptions {
  MilpOptions milp{.time_limit_seconds = 1.0, .relative_gap = 1e-4, .cuts = false};
  // Accuracy scaling keeps every path's expected accuracy at or above this (0..1).
  std::optional<double> accuracy_floor;
  // Stop after hardware scaling: what a system without variants would do (Overloaded beyond).
  bool hardware_scaling_only = false;
  MilpSolver solver;  // empty: CBC in this process
  // Solve each MILP split by the budgets of batch time each task may take (exact, and fast to
  // prove); false solves it whole, the yardstick the split search is checked against.
  bool split_by_budgets = true;
  // The (task, variant, hardware class) Deployments running now, by RunningKey (pool.h), with
  // their Ready pods. When the best plan runs others, the best plan on these alone replaces it
  // if it serves as much and its accuracy is within hold_accuracy: a variant change restarts
  // pods, and near-ties between variant mixes would otherwise swap them every interval as the
  // demand wobbles. A plan that starts pods and stops more than a quarter of the Ready ones (at
  // least one) is made again with at most that many stopped, a rolling change: on a full
  // cluster each pod a new variant starts is a Ready one stopped for its start-up.
  std::map<std::string, int> running;
  double hold_accuracy = 0.02;
  // Some pods of the running Deployments are not Ready (starting, or Pending for room): the plan
  // on these alone is taken whatever the best other mix gains, so that a change serves before
  // the next one (on a full cluster under bursts, changes every interval left the first task of
  // every path with no Ready pod for minutes). On a full cluster some pod nearly always waits
  // for room (194 of 208 decisions of the regression suite's step), so there Loki moves only
  // where its running variants cannot give a plan.
  bool hold_while_starting = false;
  // Those pods: of the quarter of the pods a plan may have unavailable, each counts as one
  // (a Deployment's maxUnavailable), so a rolling change stops more only as its pods turn Ready.
  int pods_starting = 0;
  // The batch each running (task, variant, hardware class) was given, by RunningKey. While
  // hardware scaling serves the demand, a plan at the same replicas keeps them, and a smaller
  // batch replaces one only with kBatchKeepBand of its capacity to spare (loki_budgets.h).
  std::map<std::string, int> running_batches;
};

// The cluster size S is spec.budget.maxReplicas, and per hardware class its maxReplicas; the
// demand of each execution path is its rate in `workload`. Never fails: demand beyond what
// the cluster can serve gives phase kOverloaded with the largest share any variants can serve
// (the most accurate ones only with hardware_scaling_only), then the most accurate plan for
// that share: two MILPs, each with options.milp's time limit. So the served requests never
// fall as demand grows, as far as CBC proves its plans optimal within the limit.
// Precondition: the pipeline passed api validation.
model::Plan SolveLoki(const model::Pipeline& pipeline, const model::Workload& workload,
                      const LokiOptions& options = {});

// Loki's part of a plan SolveLoki made (it always has one).
const model::AccuracyScalingPlan& LokiPart(const model::Plan& plan);

// MostAccurateFirst (Loki, Algorithm 1) over the plan's replicas: tasks in topological order,
// each stream of requests, most accurate incoming stream first, filling the next task's
// variants most accurate first up to their capacity (replicas x batch / d(batch)); demand
// beyond all capacity is spread in proportion to capacity. Fills plan.routing and
// plan.backups (variants with capacity left, most accurate first).
void RouteMostAccurateFirst(const model::Pipeline& pipeline, const model::Workload& workload,
                            model::Plan& plan);

}  // namespace pipescale::optimizer
