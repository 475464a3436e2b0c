#include "reconciler/batch_hold.h"

#include <algorithm>
#include <vector>

#include "api/deployment.h"
#include "optimizer/problem.h"
#include "reconciler/fields.h"

namespace pipescale::reconciler {

using nlohmann::json;

void HoldAppliedBatches(const model::Pipeline& pipeline, const model::Workload& workload,
                        const json& applied_plan, const std::map<std::string, json>& deployments,
                        model::Plan& plan) {
  if (plan.report.status == model::SolveStatus::kInfeasible) return;
  const auto applied = TasksByDeployment(applied_plan);
  const optimizer::Problem problem = optimizer::Compile(pipeline, workload);
  optimizer::Assignment assignment(problem.dnns.size());
  std::vector<const optimizer::Choice*> kept(plan.tasks.size(), nullptr);
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    const model::TaskPlan& t = plan.tasks[i];
    const model::Task& task = pipeline.spec.tasks[pipeline.TaskIndex(t.task)];
    const model::Variant& variant = *task.FindVariant(t.variant);
    const std::string name = api::DeploymentName(pipeline, task, variant, t.hardware_class);
    auto it = deployments.find(name);
    auto was = applied.find(name);
    if (it == deployments.end() || was == applied.end()) return;
    const api::ManagedFields f = api::ReadManagedFields(it->second, variant.batch_env);
    if (f.replicas != t.replicas || f.batch_size != IntField(*was->second, "batchSize", -1) ||
        IntField(*was->second, "replicas", -1) != t.replicas) {
      return;
    }
    const int dnn = pipeline.TaskIndex(t.task);
    const int hw = pipeline.HardwareClassIndex(t.hardware_class);
    for (const auto& c : problem.dnns[dnn].choices) {
      if (c.hardware_class == hw && c.batch == *f.batch_size) kept[i] = &c;
    }
    if (kept[i] == nullptr || kept[i]->replicas > t.replicas) return;
    assignment[dnn] = *kept[i];
  }
  if (!optimizer::MeetsSlos(problem, assignment)) return;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    plan.tasks[i].batch_size = kept[i]->batch;
    plan.tasks[i].latency_ms = kept[i]->exec_ms;
    plan.tasks[i].queue_ms = kept[i]->queue_ms;
  }
  for (size_t r = 0; r < problem.routes.size() && r < plan.paths.size(); ++r) {
    plan.paths[r].predicted_latency_ms =
        optimizer::RouteLatencyMs(problem, assignment, static_cast<int>(r));
  }
}

bool RollingOut(const json& deployment) {
  const json meta = deployment.value("metadata", json::object());
  const json status = deployment.value("status", json::object());
  const long generation = IntField(meta, "generation", 0);
  const long observed = IntField(status, "observedGeneration", 0);
  const long updated = IntField(status, "updatedReplicas", 0);
  const long running = IntField(status, "replicas", 0);
  // A new Deployment, or one only scaling up, restarts nothing: no pod of an older template.
  return running > updated || (observed < generation && running > 0);
}

namespace {

bool SloMissed(const model::Pipeline& pipeline, const model::MetricsSnapshot& metrics) {
  for (const model::Path& path : pipeline.spec.paths) {
    auto it = metrics.path_latency_ms.find(path.name);
    if (it != metrics.path_latency_ms.end() && it->second > path.slo_ms) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> HoldBatchesDuringRollouts(const model::Pipeline& pipeline,
                                                   const std::map<std::string, json>& deployments,
                                                   const model::MetricsSnapshot& metrics,
                                                   const std::optional<ClusterCapacity>& capacity,
                                                   std::vector<PlannedDeployment>& planned) {
  std::vector<std::string> held;
  if (SloMissed(pipeline, metrics)) return held;
  const bool rolling = std::any_of(deployments.begin(), deployments.end(),
                                   [](const auto& d) { return RollingOut(d.second); });
  for (PlannedDeployment& p : planned) {
    auto it = deployments.find(p.name);
    if (it == deployments.end()) continue;
    const auto batch = api::ReadManagedFields(it->second, p.variant->batch_env).batch_size;
    if (!batch || *batch == p.batch_size) continue;
    const ClassCapacity* room = capacity ? capacity->Find(p.hardware_class->name) : nullptr;
    if (rolling || (room != nullptr && room->placeable == 0)) {
      p.batch_size = *batch;
      held.push_back(p.name);
    }
  }
  return held;
}

}  // namespace pipescale::reconciler
