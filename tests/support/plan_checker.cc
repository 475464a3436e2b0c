#include "support/plan_checker.h"

#include <cmath>
#include <map>
#include <optional>

#include "optimizer/problem.h"
#include "optimizer/tail.h"

namespace pipescale::testing {

namespace {

std::string RowName(const model::TaskPlan& t) {
  return t.task + "/" + t.variant + "/" + t.hardware_class;
}

// The replicas of one Deployment against its class's limit.
void CheckReplicas(const model::Pipeline& pipeline, const std::string& hardware_class, int replicas,
                   const std::string& what, std::vector<std::string>& violations) {
  const int hw = pipeline.HardwareClassIndex(hardware_class);
  if (hw < 0) {
    violations.push_back(what + ": unknown hardware class");
    return;
  }
  const std::optional<int>& max = pipeline.spec.hardware_classes[hw].max_replicas;
  if (replicas < 0 || replicas > optimizer::kMaxReplicas || (max && replicas > *max)) {
    violations.push_back(what + ": " + std::to_string(replicas) + " replicas, the class allows " +
                         (max ? std::to_string(*max) : "any number"));
  }
}

}  // namespace

std::vector<std::string> CheckBounds(const model::Pipeline& pipeline, const model::Plan& plan) {
  std::vector<std::string> violations;
  for (const model::TaskPlan& t : plan.tasks) {
    const model::Variant* variant = pipeline.FindVariant(t.task, t.variant);
    if (variant == nullptr) {
      violations.push_back(RowName(t) + ": no such task and variant");
      continue;
    }
    if (t.batch_size < 1 || t.batch_size > variant->max_batch) {
      violations.push_back(RowName(t) + ": batch " + std::to_string(t.batch_size) +
                           " outside [1, " + std::to_string(variant->max_batch) +
                           "] (batchSize.max)");
    }
    CheckReplicas(pipeline, t.hardware_class, t.replicas, RowName(t), violations);
  }
  if (const model::PoolPlan* pools = plan.pools()) {
    for (const model::Pool& pool : pools->pools) {
      const int task = pipeline.TaskIndex(pool.task);
      if (task < 0) {
        violations.push_back("pool " + pool.task + ": no such task");
        continue;
      }
      const int max_batch = pipeline.spec.tasks[task].MostAccurateVariant().max_batch;
      for (const model::PoolMember& m : pool.members) {
        const std::string what = "pool " + pool.task + "/" + m.hardware_class;
        CheckReplicas(pipeline, m.hardware_class, m.replicas, what, violations);
        if (m.max_query > max_batch) {
          violations.push_back(what + ": serves queries of " + std::to_string(m.max_query) +
                               ", past batchSize.max " + std::to_string(max_batch));
        }
      }
    }
  }
  return violations;
}

std::vector<std::string> CheckPlan(const model::Pipeline& pipeline, const model::Workload& workload,
                                   const model::Plan& plan) {
  std::vector<std::string> violations = CheckBounds(pipeline, plan);
  std::map<std::string, double> rate;
  for (const auto& path : pipeline.spec.paths) {
    const auto it = workload.path_rates_rps.find(path.name);
    for (const auto& t : path.tasks)
      rate[t] += it == workload.path_rates_rps.end() ? 0 : it->second;
  }
  std::map<std::string, double> latency;  // d(b) + (b - 1) / lambda, per task
  if (plan.tasks.size() != pipeline.spec.tasks.size()) {
    violations.push_back("plan has " + std::to_string(plan.tasks.size()) + " tasks, pipeline " +
                         std::to_string(pipeline.spec.tasks.size()));
  }
  for (const model::TaskPlan& tp : plan.tasks) {
    const int ti = pipeline.TaskIndex(tp.task);
    if (ti < 0) {
      violations.push_back("unknown task " + tp.task);
      continue;
    }
    const model::Task& task = pipeline.spec.tasks[ti];
    const model::Variant* variant = nullptr;
    for (const auto& v : task.variants) {
      if (v.name == tp.variant) variant = &v;
    }
    const model::Profile* profile = variant ? variant->FindProfile(tp.hardware_class) : nullptr;
    if (profile == nullptr) {
      violations.push_back(tp.task + ": no profile for " + tp.variant + " on " + tp.hardware_class);
      continue;
    }
    if (tp.batch_size < 1 || tp.batch_size > profile->latency.MaxBatch(variant->max_batch)) {
      violations.push_back(tp.task + ": batch size " + std::to_string(tp.batch_size) +
                           " outside the variant's limit");
      continue;
    }
    if (tp.replicas < 1) violations.push_back(tp.task + ": fewer than one replica");
    const double d = profile->latency.Ms(tp.batch_size);
    const double lambda = rate[tp.task];
    const double capacity_rps = tp.replicas * tp.batch_size * 1000.0 / d;
    if (capacity_rps + 1e-6 < lambda) {
      violations.push_back(tp.task + ": capacity " + std::to_string(capacity_rps) +
                           " rps below its rate " + std::to_string(lambda));
    }
    if (tp.batch_size > 1 && lambda <= 0) {
      violations.push_back(tp.task + ": batches of " + std::to_string(tp.batch_size) +
                           " never fill without traffic");
    }
    // The papers' mean-value queue, or the tail model's percentile (optimizer/tail.h, itself
    // checked against a simulation in tail_test.cc).
    double queue = tp.batch_size == 1 ? 0 : 1000.0 * (tp.batch_size - 1) / lambda;
    if (pipeline.spec.slo.model == model::LatencyModel::kTail) {
      using optimizer::BatchFormation;
      const optimizer::TailLatency tail = optimizer::TaskTailLatency(
          {.rate_rps = lambda,
           .replicas = tp.replicas,
           .batch = tp.batch_size,
           .exec_ms = d,
           .exec_one_ms = profile->latency.Ms(1),
           .formation =
               variant->RouterBatches() ? BatchFormation::kRouter : BatchFormation::kServer},
          pipeline.spec.slo.percentile);
      queue = tail.fill_ms + tail.queue_ms;
    }
    if (std::abs(tp.latency_ms - d) > 1e-6 || std::abs(tp.queue_ms - queue) > 1e-6) {
      violations.push_back(tp.task + ": reported latency/queue do not match the profile (" +
                           std::to_string(tp.queue_ms) + " ms queue, " + std::to_string(queue) +
                           " expected)");
    }
    latency[tp.task] = d + queue;
  }
  for (const auto& path : pipeline.spec.paths) {
    double total = 0;
    for (const auto& t : path.tasks) total += latency[t];
    if (total > path.slo_ms + 1e-6) {
      violations.push_back("path " + path.name + ": " + std::to_string(total) + " ms over SLO " +
                           std::to_string(path.slo_ms));
    }
    for (const auto& pp : plan.paths) {
      if (pp.name == path.name && std::abs(pp.predicted_latency_ms - total) > 1e-6) {
        violations.push_back("path " + path.name + ": predicted latency misreported");
      }
    }
  }
  return violations;
}

}  // namespace pipescale::testing
