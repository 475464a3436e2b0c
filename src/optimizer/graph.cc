#include "optimizer/graph.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"
#include "model/limits.h"

namespace pipescale::optimizer {

double PathRateRps(const model::Workload& workload, const std::string& path) {
  auto it = workload.path_rates_rps.find(path);
  if (it == workload.path_rates_rps.end() || !std::isfinite(it->second)) return 0;
  return std::max(0.0, it->second);
}

double TaskDispersion(const model::Workload& workload, const std::string& task) {
  auto it = workload.task_dispersion.find(task);
  if (it == workload.task_dispersion.end() || !std::isfinite(it->second)) return 1;
  return std::clamp(it->second, 1.0, limits::kMaxDispersion);
}

std::vector<double> PathRatesRps(const model::Pipeline& pipeline, const model::Workload& workload) {
  std::vector<double> out;
  for (const model::Path& path : pipeline.spec.paths)
    out.push_back(PathRateRps(workload, path.name));
  return out;
}

std::vector<double> TaskRatesRps(const model::Pipeline& pipeline, const model::Workload& workload) {
  std::vector<double> out(pipeline.spec.tasks.size(), 0);
  for (const model::Path& path : pipeline.spec.paths) {
    const double rate = PathRateRps(workload, path.name);
    for (const std::string& task : path.tasks) out[pipeline.TaskIndex(task)] += rate;
  }
  return out;
}

std::vector<int> TopologicalOrder(const model::Pipeline& pipeline) {
  const auto& tasks = pipeline.spec.tasks;
  std::vector<int> indegree(tasks.size(), 0);
  for (const model::Task& t : tasks) {
    for (const model::Edge& e : t.next) ++indegree[pipeline.TaskIndex(e.task)];
  }
  std::vector<int> order;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (indegree[i] == 0) order.push_back(static_cast<int>(i));
  }
  // `order` doubles as the queue: everything before k has been expanded.
  for (size_t k = 0; k < order.size(); ++k) {
    for (const model::Edge& e : tasks[order[k]].next) {
      const int j = pipeline.TaskIndex(e.task);
      if (--indegree[j] == 0) order.push_back(j);
    }
  }
  PIPESCALE_CHECK(order.size() == tasks.size());  // validation rejects cycles
  return order;
}

std::vector<double> SplitSlo(double slo_ms, const std::vector<double>& weights) {
  double sum = 0;
  for (double w : weights) sum += w;
  std::vector<double> out;
  out.reserve(weights.size());
  for (double w : weights) {
    out.push_back(sum > 0 ? slo_ms * w / sum : slo_ms / static_cast<double>(weights.size()));
  }
  return out;
}

double NormalisedAccuracy(const model::Task& task, const model::Variant& variant) {
  double best = 0;
  for (const model::Variant& v : task.variants) best = std::max(best, v.accuracy);
  return best > 0 ? variant.accuracy / best : 1;
}

double CostPerHour(const model::Pipeline& pipeline, const std::vector<model::TaskPlan>& tasks) {
  double cost = 0;
  for (const model::TaskPlan& t : tasks) {
    const int hw = pipeline.HardwareClassIndex(t.hardware_class);
    cost += t.replicas * pipeline.spec.hardware_classes[hw].cost_per_hour;
  }
  return cost;
}

}  // namespace pipescale::optimizer
