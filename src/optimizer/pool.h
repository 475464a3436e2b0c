// What the pool planners (Kairos, MArk) share: a task's most accurate variant runs as a pool of
// replicas across hardware classes, each task with its share of its paths' SLOs as its budget.
#pragma once

#include <string>
#include <vector>

#include "model/pipeline.h"
#include "model/plan.h"

namespace pipescale::optimizer {

// A class a task's variant can run on, and its latency there by batch size.
struct Candidate {
  int hw = 0;
  const model::Profile* profile = nullptr;
  double Ms(int batch) const { return profile->latency.Ms(batch); }
};

// The variant's classes that are burst classes (`burst`) or main classes (not `burst`).
std::vector<Candidate> Classes(const model::Pipeline& p, const model::Variant& v, bool burst);

// The most replicas of one class any plan may ask for: `limit`, the class's and the budget's.
int ClassCap(const model::Pipeline& p, int hw, int limit);

// "task/hardware class": how PlannerInput keys what runs.
std::string PoolKey(const std::string& task, const std::string& hardware_class);

// "task/variant/hardware class": how PlannerInput::running_variants keys a Deployment.
std::string RunningKey(const std::string& task, const std::string& variant,
                       const std::string& hardware_class);

// Each task's latency budget, by task index: every path's SLO split over its tasks in
// proportion to their latency at `batch` on their fastest class, the tightest over the paths
// through the task; 0 for a task on no path.
std::vector<double> TaskBudgetsMs(const model::Pipeline& pipeline, int batch);

// How long a replica launched now takes to serve: the slowest startup of the main (not burst)
// classes. MArk provisions for the load then, and its SLO guard waits as long to judge again.
double SlowestStartupSeconds(const model::PipelineSpec& spec);

// A reason the plan is Infeasible: noted, and said in the Feasible condition.
void Shortfall(model::Plan& plan, std::string reason);

// Each path's predicted latency (per task, the slowest main class that runs replicas), and
// the plan's cost, which is also its objective.
void FillPathsAndCost(const model::Pipeline& pipeline, model::Plan& plan);

}  // namespace pipescale::optimizer
