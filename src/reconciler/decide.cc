#include "reconciler/decide.h"

#include <algorithm>
#include <set>

#include "api/deployment.h"
#include "api/plan_json.h"
#include "api/router_objects.h"
#include "api/workload.h"
#include "common/json_fields.h"
#include "common/strings.h"
#include "optimizer/registry.h"
#include "reconciler/batch_hold.h"
#include "reconciler/budget_guard.h"
#include "reconciler/conditions.h"
#include "reconciler/fields.h"
#include "reconciler/status.h"

namespace pipescale::reconciler {
namespace {

using nlohmann::json;

constexpr size_t kMaxErrorsInMessage = 5;
// Missing metrics are looked for again this soon: a long interval would leave a pipeline
// unplanned for all of it. A pipeline never planned yet looks sooner: its series appear within
// a scrape or two of its router starting, and its first load should not wait on a timer.
constexpr double kMetricsRetrySeconds = 10;
constexpr double kFirstMetricsRetrySeconds = 2;
// While the load rises the plan is looked at this often, as Knative's autoscaler ticks every 2 s:
// the rate windows fill over 10 s, and each look can add replicas a step earlier. A rise is more
// than kRiseShare above the rate the status last reported, and more than kRiseFloorRps, so that
// noise at a light load does not count.
constexpr double kRisingLookSeconds = 2;
constexpr double kRiseShare = 0.1;
constexpr double kRiseFloorRps = 0.5;

// The status as read back, with the shape the steps write into (anyone may have written it).
json StartStatus(const json& object) {
  auto it = object.find("status");
  json status = it != object.end() && it->is_object() ? *it : json::object();
  if (!status["conditions"].is_array()) status["conditions"] = json::array();
  return status;
}

Decision Invalid(const Observed& o, const std::vector<api::FieldError>& errors, long generation) {
  Decision d;
  d.status = StartStatus(o.object);
  std::string message;
  for (size_t i = 0; i < errors.size() && i < kMaxErrorsInMessage; ++i) {
    message += (i ? "; " : "") + errors[i].ToString();
  }
  if (errors.size() > kMaxErrorsInMessage) {
    message += StrFormat("; and %zu more", errors.size() - kMaxErrorsInMessage);
  }
  SetCondition(d.status["conditions"], "Ready", false, reason::kInvalidSpec, message, generation,
               o.now);
  d.status["observedGeneration"] = generation;
  return d;  // no writes, no requeue: nothing changes until the spec does
}

// Each task of the plan as the Deployment it runs in, with what runs there now.
std::vector<PlannedDeployment> Place(const model::Pipeline& pipeline, const model::Plan& plan,
                                     const Deployments& deployments) {
  std::vector<PlannedDeployment> out;
  for (const model::TaskPlan& t : plan.tasks) {
    const model::Task& task = pipeline.spec.tasks[pipeline.TaskIndex(t.task)];
    const model::Variant* variant = task.FindVariant(t.variant);
    if (variant == nullptr) variant = &task.variants.front();
    const model::HardwareClass& hw =
        pipeline.spec.hardware_classes[pipeline.HardwareClassIndex(t.hardware_class)];
    PlannedDeployment p{.task = &task,
                        .variant = variant,
                        .hardware_class = &hw,
                        .name = api::DeploymentName(pipeline, task, *variant, hw.name),
                        .planned = t.replicas,
                        .target = t.replicas,
                        .batch_size = t.batch_size};
    if (auto it = deployments.find(p.name); it != deployments.end()) {
      p.current = api::ReadManagedFields(it->second, variant->batch_env).replicas;
      p.running = api::RunningReplicas(it->second);
    }
    out.push_back(std::move(p));
  }
  return out;
}

// Whether any Deployment of the task exists, whichever variant and class it runs.
bool TaskRuns(const model::Pipeline& pipeline, const model::Task& task,
              const Deployments& deployments) {
  for (const model::Variant& v : task.variants) {
    for (const model::Profile& profile : v.profiles) {
      if (deployments.contains(api::DeploymentName(pipeline, task, v, profile.hardware_class))) {
        return true;
      }
    }
  }
  return false;
}

// Without the load there is nothing to plan from: hold what runs, never scale down. A task with
// no Deployment yet starts at the plan for spec.minRate (none: no load), so a new pipeline runs
// before its first request; a task that runs anything keeps it, so that an idle plan that differs
// from the one already created (a tie between classes) never adds Deployments. Zero traffic is not
// this case: a series that reads 0 is load 0, and is planned for.
Decision Hold(const Observed& o, const model::Pipeline& pipeline,
              const optimizer::Descriptor& optimizer, long generation, Decision d) {
  const bool ever_planned = d.status.contains("plan");
  d.requeue_after_seconds =
      std::min(pipeline.spec.interval_seconds,
               ever_planned ? kMetricsRetrySeconds : kFirstMetricsRetrySeconds);
  json& conditions = d.status["conditions"];
  std::string why;
  if (!o.metrics.ok()) {
    why = o.metrics.error().message;
  } else {
    for (const auto& m : o.metrics->missing) why += (why.empty() ? "missing " : ", ") + m;
  }
  SetCondition(conditions, "MetricsAvailable", false,
               o.metrics.ok() ? reason::kSeriesMissing : reason::kMetricsUnavailable, why,
               generation, o.now);
  SetCondition(conditions, "Ready", true, reason::kReconciled,
               "holding what runs until the load is known", generation, o.now);
  if (ConditionStatus(conditions, "PlanApplied").empty()) {
    SetCondition(conditions, "PlanApplied", false, reason::kHeld,
                 "no load measured yet: new tasks start at the plan for no load", generation,
                 o.now);
  }
  Spend spend = RunningSpend(pipeline, o.deployments);
  if (pipeline.spec.mode == model::Mode::kApply) {
    const model::Plan idle = optimizer.solve(pipeline, api::AtLeastMinRate(pipeline, {}), {});
    std::vector<PlannedDeployment> planned = Place(pipeline, idle, o.deployments);
    std::erase_if(planned, [&](const PlannedDeployment& p) {
      return TaskRuns(pipeline, *p.task, o.deployments);
    });
    d.writes = PlanWrites(pipeline, StringField(Member(o.object, "metadata"), "uid"), o.deployments,
                          planned);
    spend += TargetSpend(planned);
  }
  d.status["totalReplicas"] = spend.replicas;
  d.status["costPerHour"] = api::RoundQuantity(spend.cost_per_hour);
  return d;
}

// Stabilizes each planned Deployment's replicas against the recent recommendations, after
// recording this one.
void Stabilize(const model::Pipeline& pipeline, double now, std::vector<PlannedDeployment>& planned,
               std::vector<Recommendation>& history) {
  Recommendation r{now, {}};
  for (const PlannedDeployment& p : planned) r.replicas[p.name] = p.planned;
  Remember(history, std::move(r), pipeline.spec.behavior);
  for (PlannedDeployment& p : planned) {
    p.target = Stabilize(history, p.name, p.planned, p.current, pipeline.spec.behavior, now);
  }
}

// What the pipeline's Deployments outside the plan still run: the budget counts them.
Spend OthersSpend(const model::Pipeline& pipeline, const Deployments& deployments,
                  const std::vector<PlannedDeployment>& planned) {
  Deployments others = deployments;
  for (const PlannedDeployment& p : planned) others.erase(p.name);
  return RunningSpend(pipeline, others);
}

// The PlanApplied condition, and the writes themselves unless in Recommend mode.
void Apply(bool apply, const GuardOutcome& guard, std::vector<DeploymentWrite> writes,
           long generation, double now, Decision& d) {
  json& conditions = d.status["conditions"];
  if (!apply) {
    SetCondition(conditions, "PlanApplied", false, reason::kRecommendMode,
                 writes.empty() ? "the Deployments match the plan; nothing is written"
                                : StrFormat("%zu Deployment changes recommended; nothing is "
                                            "written in Recommend mode",
                                            writes.size()),
                 generation, now);
    return;
  }
  d.writes = std::move(writes);
  if (guard.waiting > 0) {
    SetCondition(conditions, "PlanApplied", false, reason::kScaleInFirst,
                 StrFormat("%d scale-outs wait for the scale-ins to finish: running both would "
                           "exceed the budget",
                           guard.waiting),
                 generation, now);
  } else {
    SetCondition(conditions, "PlanApplied", true, reason::kApplied,
                 "the Deployments match the plan", generation, now);
  }
}

// status.plan, the PlanChanged event and the solver record when a Deployment changes, the
// totals and what was observed.
void Report(const Observed& o, const model::Pipeline& pipeline,
            const optimizer::Descriptor& optimizer, const model::Plan& plan,
            const std::vector<PlannedDeployment>& planned, const Spend& spend,
            const DemandStep& step, Decision& d) {
  const json plan_status = PlanStatus(plan, planned);
  const json previous = d.status.value("plan", json::object());
  // Predicted latencies move with every rate and are status, not news.
  if (const std::string diff = PlanDiff(previous, plan_status, optimizer.placement);
      !diff.empty()) {
    d.events.push_back(StrFormat("%s: %d replicas, $%.3f/h: ", std::string(optimizer.name).c_str(),
                                 spend.replicas, spend.cost_per_hour) +
                       diff);
    d.status["solver"] = {{"name", optimizer.name},
                          {"status", model::SolveStatusName(plan.report.status)},
                          {"objective", plan.report.objective.value},
                          {"objectiveUnit", plan.report.objective.unit},
                          {"durationMs", 0}};  // the reconciler times the decision
  }
  d.status["plan"] = plan_status;
  d.status["totalReplicas"] = spend.replicas;
  d.status["costPerHour"] = api::RoundQuantity(spend.cost_per_hour);
  json rates = json::object();
  for (const auto& [path, rate] : o.metrics->path_rates_rps) rates[path] = api::RoundQuantity(rate);
  d.status["observed"] = {{"pathRates", rates}};
  if (optimizer.memory.demand_ewma) {
    json smoothed = json::object();
    for (const auto& [path, rate] : step.demand.rps) smoothed[path] = api::RoundQuantity(rate);
    d.status["observed"]["demand"] = smoothed;
  }
  if (o.metrics->arrival_rate_rps) {
    d.status["observed"]["arrivalRate"] = api::RoundQuantity(*o.metrics->arrival_rate_rps);
  }
  if (o.metrics->data_plane) {
    d.status["observed"]["dataPlane"] = DataPlaneStatus(pipeline, plan, *o.metrics->data_plane);
  }
  if (step.mix) d.status["observed"]["querySizes"] = QueryMixStatus(*step.mix);
}

// Some path's rate is above the one the last status reported (`observed`, whatever wrote it) by
// more than noise, or this is the first reading: a load that has just begun reads low in windows
// that are still filling.
bool LoadRising(const json& observed, const model::MetricsSnapshot& metrics) {
  const json& before = Member(observed, "pathRates");
  if (!before.is_object() || before.empty()) return true;
  return std::ranges::any_of(
      metrics.path_rates_rps, [&](const std::pair<const std::string, double>& path_rate) {
        const auto it = before.find(path_rate.first);
        const double was = it != before.end() && it->is_number() ? it->get<double>() : 0;
        return path_rate.second > was * (1 + kRiseShare) + kRiseFloorRps;
      });
}

// status.capacity, per hardware class, when the operator sees the cluster's nodes.
void ReportCapacity(const Observed& o, Decision& d) {
  if (o.capacity) {
    d.status["capacity"] = CapacityToStatus(*o.capacity);
  } else {
    d.status.erase("capacity");
  }
}

// Pods the scheduler cannot place: the status says which Deployment waits on what, PlanApplied
// says Unschedulable, and a Warning event goes out when the list changes (not at every look).
void ReportUnschedulable(const Observed& o, long generation, Decision& d) {
  const json previous = d.status.value("unschedulable", json::array());
  json now = json::array();
  std::string message;
  if (o.capacity) {
    for (const Unschedulable& u : o.capacity->unschedulable) {
      now.push_back({{"deployment", u.deployment}, {"pods", u.pods}, {"message", u.message}});
      message += StrFormat("%s%s: %d pods wait: %s", message.empty() ? "" : "; ",
                           u.deployment.c_str(), u.pods, u.message.c_str());
    }
  }
  if (now.empty()) {
    d.status.erase("unschedulable");
    return;
  }
  d.status["unschedulable"] = now;
  SetCondition(d.status["conditions"], "PlanApplied", false, reason::kUnschedulable, message,
               generation, o.now);
  // News is a Deployment that starts to wait; the scheduler's counts of nodes in its message
  // move with every node that joins or leaves.
  std::set<std::string> before;
  for (const json& u : previous.is_array() ? previous : json::array()) {
    if (u.is_object()) before.insert(StringField(u, "deployment"));
  }
  for (const json& u : now) {
    if (!before.contains(u["deployment"].get<std::string>())) {
      d.warnings.push_back({reason::kUnschedulable, message});
      break;
    }
  }
}

// QuerySizesShifted follows the status, as PlanChanged does: a mix adopted in memory whose
// writes failed is announced by the next reconcile that writes it, and once only.
void NoticeMixShift(const Observed& o, const DemandStep& step, Decision& d) {
  if (!step.mix || step.mix->memory.adopted.empty()) return;
  const json& before = Member(Member(Member(o.object, "status"), "memory"), "queryMix");
  if (before == Member(d.status["memory"], "queryMix")) return;
  d.notices.push_back({reason::kQuerySizesShifted,
                       StrFormat("the router's query sizes moved more than %.2f from the planned "
                                 "mix: planning for %s",
                                 kMixShift, MixText(step.mix->planned).c_str())});
}

}  // namespace

Decision Decide(const Observed& o, const api::ParsedPipeline& parsed) {
  const long generation = IntField(Member(o.object, "metadata"), "generation", 0);
  if (!parsed.pipeline) return Invalid(o, parsed.errors, generation);
  const model::Pipeline& pipeline = *parsed.pipeline;
  const optimizer::Descriptor& optimizer = optimizer::OptimizerOf(pipeline.spec);
  const bool apply = pipeline.spec.mode == model::Mode::kApply;
  const std::string uid = StringField(Member(o.object, "metadata"), "uid");

  Decision d;
  d.status = StartStatus(o.object);
  d.status["observedGeneration"] = generation;
  d.requeue_after_seconds = pipeline.spec.interval_seconds;
  d.memory = o.memory;
  ReportCapacity(o, d);
  if (apply) {
    // Before the metrics: the router is where they come from.
    const std::optional<double> arrival =
        o.metrics.ok() ? o.metrics->arrival_rate_rps : std::nullopt;
    d.router = RouterWrites(pipeline, uid, o.router_cluster_role, o.router, arrival);
    d.router_pipeline =
        RouterPipelineWrite(pipeline, uid, o.routing_config_map, api::PipelineForRouter(o.object));
  }
  if (!o.metrics.ok() || !o.metrics->Complete()) {
    d = Hold(o, pipeline, optimizer, generation, std::move(d));
    ReportUnschedulable(o, generation, d);
    return d;
  }
  json& conditions = d.status["conditions"];
  SetCondition(conditions, "MetricsAvailable", true, reason::kMetricsRead, "", generation, o.now);
  if (LoadRising(Member(d.status, "observed"), *o.metrics)) {
    d.requeue_after_seconds = std::min(*d.requeue_after_seconds, kRisingLookSeconds);
  }

  const DemandStep step =
      StepDemand(pipeline, optimizer, o.memory.demand, *o.metrics, o.deployments, o.now);
  d.memory.demand = step.demand;
  // Plan for the room the cluster has: Loki's "cluster is full" is the GPUs running out.
  model::Pipeline measured =
      o.capacity ? WithinCapacity(pipeline, *o.capacity, o.deployments) : pipeline;
  UseMeasured(measured, optimizer, *o.metrics, step);
  model::Plan plan = optimizer.solve(measured, step.workload, step.input);
  if (plan.tasks.empty()) {
    // The solver's time budget passed before any plan: hold what runs rather than read an
    // empty plan as "scale everything to zero".
    SetCondition(conditions, "PlanApplied", false, reason::kHeld,
                 "the optimizer found no plan within its time budget; holding the current one",
                 generation, o.now);
    return d;
  }
  const json applied = d.status.value("plan", json::object());
  if (optimizer.memory.holds_applied_batches) {
    HoldAppliedBatches(pipeline, step.workload, applied, o.deployments, plan);
  }

  std::vector<PlannedDeployment> planned = Place(pipeline, plan, o.deployments);
  Stabilize(pipeline, o.now, planned, d.memory.history);
  const std::vector<std::string> held =
      HoldBatchesDuringRollouts(pipeline, o.deployments, *o.metrics, o.capacity, planned);
  const GuardOutcome guard =
      GuardBudget(pipeline.spec.budget, planned, OthersSpend(pipeline, o.deployments, planned));
  const Spend spend = TargetSpend(planned);
  SetFeasible(conditions, plan, guard, spend, generation, o.now);

  std::vector<DeploymentWrite> writes = PlanWrites(pipeline, uid, o.deployments, planned);
  std::set<std::string> names;
  for (const PlannedDeployment& p : planned) names.insert(p.name);
  for (DeploymentWrite& w : LeftoverWrites(pipeline, o.deployments, names)) {
    writes.push_back(std::move(w));
  }
  if (apply) {
    d.reverts = FindReverts(applied, o.deployments, planned);
    // Also when the plan hands nothing over but a ConfigMap exists: its stale parts go.
    if (optimizer.data_plane != optimizer::DataPlane::kNone || pipeline.RouterBatches() ||
        o.routing_config_map) {
      d.routing = RoutingWrite(pipeline, uid, o.routing_config_map, plan);
    }
  }
  Apply(apply, guard, std::move(writes), generation, o.now, d);
  if (apply && !held.empty()) {
    std::string waiting;
    for (const std::string& name : held) waiting += (waiting.empty() ? "" : ", ") + name;
    SetCondition(conditions, "PlanApplied", false, reason::kBatchHeld,
                 "batch size changes wait: " + waiting, generation, o.now);
    // Look again soon: the held change goes out as soon as the rollout ends.
    d.requeue_after_seconds = std::min(*d.requeue_after_seconds, 2.0);
  }
  if (apply) ReportUnschedulable(o, generation, d);
  SetCondition(conditions, "Ready", true, reason::kReconciled, "", generation, o.now);
  Report(o, pipeline, optimizer, plan, planned, spend, step, d);
  d.status["memory"] = MemoryToStatus(d.memory, optimizer);
  NoticeMixShift(o, step, d);
  d.plan = std::move(plan);
  return d;
}

api::ParsedPipeline ParseObserved(const json& object) {
  json spec_only = object;
  spec_only.erase("status");
  return api::ParsePipeline(spec_only.dump());
}

Decision Decide(const Observed& observed) {
  return Decide(observed, ParseObserved(observed.object));
}

}  // namespace pipescale::reconciler
