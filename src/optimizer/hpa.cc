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
int DesiredReplicas(double rate_rps, double replica_rps, double target, int current) {
  // In doubles first: a rate far past any cluster must not overflow an int.
  const auto count = [](double replicas) {
    return static_cast<int>(std::clamp(std::ceil(replicas), 1.0, 1.0 * kMaxReplicas));
  };
  if (current <= 0) return count(rate_rps / (target * replica_rps));
  const double ratio = rate_rps / (current * replica_rps) / target;
  if (std::abs(ratio - 1) <= kHpaTolerance) return current;
  return count(current * ratio);
}

}  // namespace

model::Plan SolveHpa(const model::Pipeline& pipeline, const model::Workload& workload,
                     const PlannerInput& input, const BaselineKnobs& knobs) {
  const model::PipelineSpec& spec = pipeline.spec;
  const std::vector<double> rates = TaskRatesRps(pipeline, workload);
  const std::vector<BaselineTask> deployed = DeployBaseline(pipeline, {}, knobs);
  model::Plan plan;
  std::vector<double> task_ms(spec.tasks.size(), 0);
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const BaselineTask& d = deployed[i];
    const model::Variant& v = spec.tasks[i].variants[d.variant];
    const model::HardwareClass& hw = spec.hardware_classes[d.hw_class];
    const auto running = input.running.find(PoolKey(spec.tasks[i].name, hw.name));
    const int replicas =
        std::min(DesiredReplicas(rates[i], d.replica_rps, knobs.target,
                                 running == input.running.end() ? 0 : running->second),
                 d.max_replicas);
    const double one_ms = BatchMs(spec, v.FindProfile(hw.name)->latency, 1);
    const TailLatency tail = TaskTailLatency({.rate_rps = rates[i],
                                              .replicas = replicas,
                                              .batch = d.batch,
                                              .exec_ms = d.batch_ms,
                                              .exec_one_ms = one_ms},
                                             spec.slo.percentile);
    task_ms[i] = std::min(tail.TotalMs(), kMaxQueueMs);
    plan.tasks.push_back(
        {.task = spec.tasks[i].name,
         .variant = v.name,
         .hardware_class = hw.name,
         .replicas = replicas,
         .batch_size = d.batch,
         .latency_ms = d.batch_ms,
         .queue_ms = std::min(tail.TotalMs() - d.batch_ms, kMaxQueueMs),
         .batch_wait_ms = kBaselineQueueDelayMs,
         .server_queue = v.RouterBatches()
                             ? model::ServerQueue{}
                             : model::ServerQueue{kBaselineQueueDelayMs, d.queue_timeout_ms},
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
