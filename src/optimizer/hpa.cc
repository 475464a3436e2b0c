#include "optimizer/hpa.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "optimizer/graph.h"
#include "optimizer/pool.h"
#include "optimizer/problem.h"
#include "optimizer/tail.h"

namespace pipescale::optimizer {
namespace {

// GetResourceUtilizationRatio (metrics/utilization.go): usage over requests in whole percent,
// truncated, over the target percent. Each pod requests 1000m, the CPU a busy share of 1 uses.
double UtilizationRatio(int64_t usage_milli, int pods, int target_percent) {
  const int64_t percent = usage_milli * 100 / (int64_t{pods} * 1000);
  return static_cast<double>(percent) / target_percent;
}

// Replicas as an int within [1, kMaxReplicas]; in doubles first, so that a rate or a reading
// far past any cluster's cannot overflow.
int ReplicaCount(double replicas) {
  return static_cast<int>(std::clamp(std::ceil(replicas), 1.0, 1.0 * kMaxReplicas));
}

// The HPA's step for one task: from its reading when it runs, else from its rate.
int DesiredReplicas(const PlannerInput& input, const std::string& key, double rate_rps,
                    double replica_rps, double target) {
  const auto running = input.running.find(key);
  const int current = running == input.running.end() ? 0 : running->second;
  if (current <= 0) return ReplicaCount(rate_rps / (target * replica_rps));
  const auto busy = input.utilization.find(key);
  const auto ready = input.ready.find(key);
  if (busy == input.utilization.end() || ready == input.ready.end()) return current;
  return HpaUtilizationReplicas(busy->second, ready->second, current, target).value_or(current);
}

}  // namespace

std::optional<int> HpaUtilizationReplicas(double busy_share, int ready, int current,
                                          double target) {
  // Pods being deleted are skipped by groupPods, so no more than `current` count.
  ready = std::min(ready, current);
  if (ready <= 0 || !std::isfinite(busy_share) || busy_share < 0) return std::nullopt;
  // In doubles first: a reading far past any pod's must not overflow.
  const auto usage_milli =
      static_cast<int64_t>(std::llround(std::min(busy_share, 1e6) * ready * 1000));
  const int target_percent = std::max(1, static_cast<int>(std::lround(target * 100)));
  const double ratio = UtilizationRatio(usage_milli, ready, target_percent);
  const int unready = current - ready;
  if (unready == 0 || ratio <= 1.0) {
    if (std::abs(1.0 - ratio) <= kHpaTolerance) return current;
    return ReplicaCount(ratio * ready);
  }
  const double rebalanced = UtilizationRatio(usage_milli, current, target_percent);
  if (std::abs(1.0 - rebalanced) <= kHpaTolerance || rebalanced < 1.0) return current;
  return std::max(ReplicaCount(rebalanced * current), current);
}

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
    const int replicas = std::min(DesiredReplicas(input, PoolKey(spec.tasks[i].name, hw.name),
                                                  rates[i], d.replica_rps, knobs.target),
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
