#include "optimizer/hpa.h"

#include <algorithm>
#include <cmath>

#include "optimizer/graph.h"
#include "optimizer/pool.h"
#include "optimizer/problem.h"
#include "optimizer/tail.h"

namespace pipescale::optimizer {
namespace {

// The HPA's step for one task: the running replicas, or the desired count.
int DesiredReplicas(double rate_rps, double replica_rps, int current) {
  // In doubles first: a rate far past any cluster must not overflow an int.
  const auto count = [](double replicas) {
    return static_cast<int>(std::clamp(std::ceil(replicas), 1.0, 1.0 * kMaxReplicas));
  };
  if (current <= 0) return count(rate_rps / (kHpaTarget * replica_rps));
  const double ratio = rate_rps / (current * replica_rps) / kHpaTarget;
  if (std::abs(ratio - 1) <= kHpaTolerance) return current;
  return count(current * ratio);
}

// A request's time on a replica serving one at a time: d(1), or, where the clients' queries
// carry several rows (spec.querySizes), d at each size weighted by its share. The HPA sees
// this as CPU time per request, so it sizes a replica by it.
double RequestMs(const model::PipelineSpec& spec, const model::LatencyProfile& latency) {
  double weight = 0, ms = 0;
  for (const model::QuerySize& q : spec.query_sizes) {
    weight += q.weight;
    ms += q.weight * latency.Ms(q.size);
  }
  return weight > 0 ? ms / weight : latency.Ms(1);
}

}  // namespace

model::Plan SolveHpa(const model::Pipeline& pipeline, const model::Workload& workload,
                     const PlannerInput& input) {
  const model::PipelineSpec& spec = pipeline.spec;
  const std::vector<double> rates = TaskRatesRps(pipeline, workload);
  model::Plan plan;
  std::vector<double> task_ms(spec.tasks.size(), 0);
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const model::Task& task = spec.tasks[i];
    const model::Variant& v = task.MostAccurateVariant();
    const model::Profile& profile = v.profiles.front();
    const model::HardwareClass& hw =
        spec.hardware_classes[pipeline.HardwareClassIndex(profile.hardware_class)];
    const double exec_ms = RequestMs(spec, profile.latency);
    const auto running = input.running.find(PoolKey(task.name, hw.name));
    int replicas = DesiredReplicas(rates[i], 1000 / exec_ms,
                                   running == input.running.end() ? 0 : running->second);
    replicas = std::min(replicas, hw.max_replicas ? std::max(1, *hw.max_replicas) : kMaxReplicas);
    const TailLatency tail = TaskTailLatency({.rate_rps = rates[i],
                                              .replicas = replicas,
                                              .batch = 1,
                                              .exec_ms = exec_ms,
                                              .exec_one_ms = exec_ms},
                                             spec.slo.percentile);
    task_ms[i] = std::min(tail.TotalMs(), kMaxQueueMs);
    plan.tasks.push_back({.task = task.name,
                          .variant = v.name,
                          .hardware_class = hw.name,
                          .replicas = replicas,
                          .batch_size = 1,
                          .latency_ms = exec_ms,
                          .queue_ms = std::min(tail.TotalMs() - exec_ms, kMaxQueueMs),
                          .load_rps = rates[i]});
  }
  for (const model::Path& path : spec.paths) {
    double ms = 0;
    for (const std::string& t : path.tasks) ms += task_ms[pipeline.TaskIndex(t)];
    plan.paths.push_back({.name = path.name, .slo_ms = path.slo_ms, .predicted_latency_ms = ms});
  }
  plan.cost_per_hour = CostPerHour(pipeline, plan.tasks);
  plan.report = {.optimizer = "hpa",
                 .status = model::SolveStatus::kFeasible,
                 .objective = {static_cast<double>(plan.TotalReplicas()), "replicas"}};
  return plan;
}

}  // namespace pipescale::optimizer
