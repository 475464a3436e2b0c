#include "reconciler/status.h"

#include "api/deployment.h"
#include "api/plan_json.h"
#include "common/strings.h"
#include "common/time.h"
#include "reconciler/conditions.h"
#include "reconciler/fields.h"

namespace pipescale::reconciler {

using nlohmann::json;

json PlanStatus(const model::Plan& plan, const std::vector<PlannedDeployment>& planned) {
  json out = api::PlanToJsonValue(plan, {.rounded = true, .report = false});
  // What the status adds to the plan: each task's Deployment and what it is set to: the
  // replicas stabilized and within the budget, the batch size a rollout rule may have held.
  json& tasks = out["tasks"];
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    tasks[i]["deployment"] = planned[i].name;
    tasks[i]["replicas"] = planned[i].target;
    tasks[i]["batchSize"] = planned[i].batch_size;
  }
  return out;
}

std::string PlanDiff(const json& before, const json& after, optimizer::Placement placement) {
  std::map<std::string, std::pair<int, int>> old;
  // The previous status is read back from the cluster: anything may be in it.
  for (const auto& [name, t] : TasksByDeployment(before)) {
    old[name] = {IntField(*t, "replicas", 0), IntField(*t, "batchSize", 0)};
  }
  std::map<std::string, int> per_task;
  for (const auto& t : after["tasks"]) ++per_task[t["task"].get<std::string>()];
  std::string diff;
  for (const auto& t : after["tasks"]) {
    const std::string name = t["deployment"];
    const int replicas = t["replicas"];
    const int batch = t["batchSize"];
    auto it = old.find(name);
    if (it != old.end() && it->second == std::pair{replicas, batch}) continue;
    std::string label = t["task"].get<std::string>();
    if (placement == optimizer::Placement::kPerVariant) {
      label += "/" + t["variant"].get<std::string>();
    } else if (per_task[t["task"].get<std::string>()] > 1) {
      label += "@" + t["hardwareClass"].get<std::string>();
    }
    diff += (diff.empty() ? "" : ", ") + label + " " +
            (it == old.end() ? StrFormat("new: %d replicas, batch %d", replicas, batch)
                             : StrFormat("%d->%d replicas, batch %d->%d", it->second.first,
                                         replicas, it->second.second, batch));
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

void SetFeasible(json& conditions, const model::Plan& plan, const GuardOutcome& guard,
                 const Spend& spend, long generation, double now) {
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
                   const std::map<std::string, json>& deployments) {
  Spend out;
  for (const auto& [name, deployment] : deployments) {
    const int running = api::RunningReplicas(deployment);
    const json& meta = deployment["metadata"];
    const int hw = pipeline.HardwareClassIndex(
        StringField(meta.value("labels", json::object()), "pipescale.io/hardware-class"));
    out.replicas += running;
    if (hw >= 0) out.cost_per_hour += running * pipeline.spec.hardware_classes[hw].cost_per_hour;
  }
  return out;
}

namespace {

json Rounded(const std::map<std::string, double>& values, double (*round)(double)) {
  json out = json::object();
  for (const auto& [key, v] : values) out[key] = round(v);
  return out;
}

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

json DataPlaneStatus(const model::Pipeline& pipeline, const model::Plan& plan,
                     const model::DataPlaneSnapshot& observed) {
  json out = {{"dropsPerSecond", Rounded(observed.drops_rps, api::RoundQuantity)},
              {"reroutesPerSecond", api::RoundQuantity(observed.reroutes_rps)},
              {"spillShare", Rounded(observed.spill_share, api::RoundFraction)},
              {"poolWaiting", Rounded(observed.pool_waiting, api::RoundQuantity)},
              {"batchRows", Rounded(observed.batch_rows, api::RoundQuantity)}};
  json shed = json::object();
  for (const auto& [key, rps] : observed.shed_rps) {
    const size_t slash = key.find('/');
    if (slash != std::string::npos) {
      shed[key.substr(0, slash)][key.substr(slash + 1)] = api::RoundQuantity(rps);
    }
  }
  out["shedPerSecond"] = std::move(shed);
  if (const auto* loki = plan.accuracy_scaling()) {
    out["plannedAccuracy"] = api::RoundFraction(loki->accuracy);
    if (auto served = ServedAccuracy(pipeline, observed.variant_rps)) {
      out["servedAccuracy"] = api::RoundFraction(*served);
    }
  }
  return out;
}

namespace {

json MixToJson(const Mix& mix) {
  json out = json::array();
  for (const auto& [size, share] : Shares(mix)) {
    out.push_back({{"size", size}, {"share", api::RoundFraction(share)}});
  }
  return out;
}

}  // namespace

json QueryMixStatus(const MixStep& step) {
  json out = {{"source", step.memory.adopted.empty() ? "spec" : "measured"},
              {"planned", MixToJson(step.planned)}};
  if (!step.measured.empty()) out["measured"] = MixToJson(step.measured);
  if (step.shift) out["shift"] = api::RoundFraction(*step.shift);
  if (!step.memory.pending.empty()) out["settlingSince"] = FormatRfc3339(step.memory.pending_since);
  return out;
}

}  // namespace pipescale::reconciler
