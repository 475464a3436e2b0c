// Kairos and MArk for a whole pipeline: each task's most accurate variant runs as a pool of
// replicas across hardware classes. Kairos sizes the pools by its throughput upper bound within
// the cost budget; MArk by forecast load with launch-overhead-aware greedy provisioning.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "model/pipeline.h"
#include "model/plan.h"

namespace pipescale::optimizer {

// Each task's latency budget, by task index: every path's SLO split over its tasks in
// proportion to their latency at `batch` on their fastest class, the tightest over the paths
// through the task; 0 for a task on no path.
std::vector<double> TaskBudgetsMs(const model::Pipeline& pipeline, int batch);

// Requests per second each task sees (by task index): the rates of the paths through it.
std::vector<double> TaskRates(const model::Pipeline& pipeline, const model::Workload& workload);

struct KairosOptions {
  // Plans so that the upper bound times this covers the demand: measured allowable QPS is
  // 0.85-0.9 of the bound in Kairos's own simulations.
  double derate = 0.85;
  // A cap on any class's count, so the enumeration stays small without a budget.
  int max_per_class = 64;
};

// Per task the cheapest configuration (base class count >= 1) whose derated upper bound covers
// the task's rate. When the cost budget cannot cover the demand, a single-task pipeline takes
// Kairos's pick (the similarity rule over the bound's top 10 within the budget), a longer one
// the largest share of the demand every task covers together within the budget.
model::Plan SolveKairos(const model::Pipeline& pipeline, const model::Workload& workload,
                        const KairosOptions& options = {});

// How long a replica launched now takes to serve: the slowest startup of the main (not burst)
// classes. MArk provisions for the load then, and its SLO guard waits as long to judge again.
double SlowestStartupSeconds(const model::PipelineSpec& spec);

struct MarkInput {
  // Per path, its rate at each past planning step, oldest first; may be empty.
  std::map<std::string, std::vector<double>> history;
  // Replicas running now, by "task/hardware class": kept at no launch overhead.
  std::map<std::string, int> running;
  // Their batch sizes: kept while they still meet the budget, as every change restarts pods.
  std::map<std::string, int> running_batch;
  // Paths whose measured tail latency missed the SLO: the SLO guard adds replicas now.
  std::set<std::string> late_paths;
  int guard_step = 1;  // replicas the guard adds to the busiest task of a late path
};

// MArk per task: the batch tuned per class within the task's budget, the forecast of its load
// over the horizon (spec.forecast, floored at the current rate), the greedy provisioning for the
// steps from the longest startup on, the SLO guard, and the warm burst classes at their minimum.
model::Plan SolveMark(const model::Pipeline& pipeline, const model::Workload& workload,
                      const MarkInput& input);

}  // namespace pipescale::optimizer
