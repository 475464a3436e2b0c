#include "reconciler/status.h"

#include "api/deployment.h"
#include "api/deployment_view.h"
#include "common/strings.h"
#include "common/time.h"
#include "reconciler/conditions.h"

namespace pipescale::reconciler {

model::AppliedPlan PlanStatus(const model::Plan& plan,
                              const std::vector<PlannedDeployment>& planned) {
  model::AppliedPlan out{.plan = plan, .deployments = {}};
  // What the status adds to the plan: each task's Deployment and what it is set to: the
  // replicas stabilized and within the budget, the batch size a rollout rule may have held.
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    out.plan.tasks[i].replicas = planned[i].target;
    out.plan.tasks[i].batch_size = planned[i].batch_size;
    out.deployments.push_back(planned[i].name);
  }
  return out;
}

std::string PlanDiff(const model::AppliedPlan* before, const model::AppliedPlan& after,
                     optimizer::Placement placement) {
  std::map<std::string, int> per_task;
  for (const model::TaskPlan& t : after.plan.tasks) ++per_task[t.task];
  std::string diff;
  for (size_t i = 0; i < after.plan.tasks.size() && i < after.deployments.size(); ++i) {
    const model::TaskPlan& t = after.plan.tasks[i];
    const model::TaskPlan* old = before != nullptr ? before->Find(after.deployments[i]) : nullptr;
    if (old != nullptr && old->replicas == t.replicas && old->batch_size == t.batch_size) continue;
    std::string label = t.task;
    if (placement == optimizer::Placement::kPerVariant) {
      label += "/" + t.variant;
    } else if (per_task[t.task] > 1) {
      label += "@" + t.hardware_class;
    }
    diff += (diff.empty() ? "" : ", ") + label + " " +
            (old == nullptr ? StrFormat("new: %d replicas, batch %d", t.replicas, t.batch_size)
                            : StrFormat("%d->%d replicas, batch %d->%d", old->replicas, t.replicas,
                                        old->batch_size, t.batch_size));
  }
  return diff;
}

namespace {

// "; " and the plan's reasons, for a condition's message.
std::string Reasons(const model::Plan& plan) {
  std::string out;
  for (const std::string& r : plan.report.reasons) out += "; " + r;
  return out;
}

}  // namespace

void SetFeasible(std::vector<model::Condition>& conditions, const model::Plan& plan,
                 const GuardOutcome& guard, const Spend& spend, long generation, double now) {
  if (guard.over_budget) {
    SetCondition(conditions, "Feasible", false, reason::kOverBudget,
                 StrFormat("the plan needs more than the budget allows; scale-out held at %d "
                           "replicas, $%.3f/h",
                           spend.replicas, spend.cost_per_hour),
                 generation, now);
  } else if (const auto* loki = plan.accuracy_scaling();
             loki != nullptr && loki->phase == model::Phase::kOverloaded) {
    SetCondition(conditions, "Feasible", false, reason::kOverloaded,
                 StrFormat("the demand exceeds what the cluster serves within the SLOs even "
                           "with the fastest variants; serving %.1f%% of it",
                           100 * plan.served_fraction) +
                     Reasons(plan),
                 generation, now);
  } else if (plan.report.status == model::SolveStatus::kInfeasible) {
    SetCondition(conditions, "Feasible", false, reason::kInfeasible,
                 "no plan meets every SLO; running the fastest plan" + Reasons(plan), generation,
                 now);
  } else {
    SetCondition(
        conditions, "Feasible", true,
        plan.report.status == model::SolveStatus::kOptimal ? reason::kOptimal : reason::kFeasible,
        "", generation, now);
  }
}

Spend RunningSpend(const model::Pipeline& pipeline,
                   const std::map<std::string, api::DeploymentView>& deployments,
                   const std::set<std::string>& except) {
  Spend out;
  for (const auto& [name, deployment] : deployments) {
    if (except.contains(name)) continue;
    const int running = api::RunningReplicas(deployment);
    const auto& labels = deployment.meta.labels;
    const auto label = labels.find("pipescale.io/hardware-class");
    const int hw = label == labels.end() ? -1 : pipeline.HardwareClassIndex(label->second);
    out.replicas += running;
    if (hw >= 0) out.cost_per_hour += running * pipeline.spec.hardware_classes[hw].cost_per_hour;
  }
  return out;
}

namespace {

// Per task, the call-weighted mean of its answering variants' accuracy over its most accurate
// one's; their product over the tasks that answered. nullopt when none did.
std::optional<double> ServedAccuracy(const model::Pipeline& pipeline,
                                     const std::map<std::string, double>& variant_rps) {
  std::optional<double> product;
  for (const model::Task& task : pipeline.spec.tasks) {
    const double best = task.MostAccurateVariant().accuracy;
    double calls = 0, weighted = 0;
    for (const model::Variant& v : task.variants) {
      const auto it = variant_rps.find(task.name + "/" + v.name);
      if (it == variant_rps.end() || best <= 0) continue;
      calls += it->second;
      weighted += it->second * v.accuracy / best;
    }
    if (calls > 0) product = product.value_or(1) * weighted / calls;
  }
  return product;
}

}  // namespace

model::ObservedDataPlane DataPlaneStatus(const model::Pipeline& pipeline, const model::Plan& plan,
                                         const model::DataPlaneSnapshot& observed) {
  model::ObservedDataPlane out{.drops_rps = observed.drops_rps,
                               .shed_rps = {},
                               .reroutes_rps = observed.reroutes_rps,
                               .spill_share = observed.spill_share,
                               .pool_waiting = observed.pool_waiting,
                               .batch_rows = observed.batch_rows};
  for (const auto& [key, rps] : observed.shed_rps) {
    const size_t slash = key.find('/');
    if (slash != std::string::npos) out.shed_rps[key.substr(0, slash)][key.substr(slash + 1)] = rps;
  }
  if (const auto* loki = plan.accuracy_scaling()) {
    out.planned_accuracy = loki->accuracy;
    out.served_accuracy = ServedAccuracy(pipeline, observed.variant_rps);
  }
  return out;
}

namespace {

std::vector<model::SizeShare> MixShares(const Mix& mix) {
  std::vector<model::SizeShare> out;
  for (const auto& [size, share] : Shares(mix)) out.push_back({.size = size, .share = share});
  return out;
}

}  // namespace

model::QuerySizesRecord QueryMixStatus(const MixStep& step) {
  model::QuerySizesRecord out{
      .source = step.memory.adopted.empty() ? model::MixSource::kSpec : model::MixSource::kMeasured,
      .planned = MixShares(step.planned),
      .measured = {},
      .shift = step.shift};
  // Shares() reads an empty mix as every query one row; an empty measurement is none.
  if (!step.measured.empty()) out.measured = MixShares(step.measured);
  if (!step.memory.pending.empty()) out.settling_since = FormatRfc3339(step.memory.pending_since);
  return out;
}

}  // namespace pipescale::reconciler
