// What every optimizer reads off a pipeline and a workload, computed one way: the rate of each
// path and task (negative and non-finite rates count as 0) and how bursty a task's arrivals are,
// the tasks in topological order, a path's SLO split over its tasks, a variant's accuracy relative
// to its task's best, and what a plan's replicas cost.
#pragma once

#include <string>
#include <vector>

#include "model/pipeline.h"
#include "model/plan.h"

namespace pipescale::optimizer {

// The rate entering `path`, in requests per second: 0 when absent, negative or not finite.
double PathRateRps(const model::Workload& workload, const std::string& path);

// PathRateRps for each of spec.paths, by path index.
std::vector<double> PathRatesRps(const model::Pipeline& pipeline, const model::Workload& workload);

// Requests per second each task sees, by task index: the rates of the paths through it.
std::vector<double> TaskRatesRps(const model::Pipeline& pipeline, const model::Workload& workload);

// How bursty `task`'s arrivals are (model::Workload::task_dispersion): 1 when absent, below 1
// or not finite; at most limits::kMaxDispersion.
double TaskDispersion(const model::Workload& workload, const std::string& task);

// Task indices such that every edge points forward. Precondition: api validated the DAG.
std::vector<int> TopologicalOrder(const model::Pipeline& pipeline);

// `slo_ms` split in proportion to `weights` (one per task of a path); equal shares when the
// weights sum to 0.
std::vector<double> SplitSlo(double slo_ms, const std::vector<double>& weights);

// The variant's accuracy over the best of its task's variants, in (0, 1].
double NormalisedAccuracy(const model::Task& task, const model::Variant& variant);

// Dollars per hour of `tasks`' replicas at their classes' prices.
double CostPerHour(const model::Pipeline& pipeline, const std::vector<model::TaskPlan>& tasks);

}  // namespace pipescale::optimizer
