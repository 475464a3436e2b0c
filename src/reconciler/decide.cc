#include "reconciler/decide.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "api/deployment.h"
#include "api/workload.h"
#include "common/strings.h"
#include "optimizer/floors.h"
#include "optimizer/pool.h"
#include "optimizer/registry.h"
#include "reconciler/batch_hold.h"
#include "reconciler/budget_guard.h"
#include "reconciler/conditions.h"
#include "reconciler/idle.h"
#include "reconciler/slo_feedback.h"
#include "reconciler/status.h"
#include "reconciler/surge.h"
#include "reconciler/worth_writing.h"

namespace pipescale::reconciler {
namespace {

constexpr size_t kMaxErrorsInMessage = 5;
// Missing metrics are looked for again this soon: a long interval would leave a pipeline
// unplanned for all of it. A pipeline never planned yet looks sooner: its series appear within
// a scrape or two of its router starting, and its first load should not wait on a timer.
constexpr double kMetricsRetrySeconds = 10;
constexpr double kFirstMetricsRetrySeconds = 2;
// While the load rises the plan is looked at this often, as Knative's autoscaler ticks every 2 s:
// the rate windows fill over 10 s, and each look can add replicas a step earlier. A rise is a
// move the status would be rewritten for (MeasurementMoved: more than its jitter, so the next look
// compares with the risen rate, not the old one again), upwards, and more than kRiseFloorRps, so
// that noise at a light load does not count.
constexpr double kRisingLookSeconds = 2;
constexpr double kRiseFloorRps = 0.5;

// What every step of one decision reads: what was observed, the valid pipeline, its optimizer
// and the object's identity.
struct Context {
  const Observed& o;
  const model::Pipeline& pipeline;
  const optimizer::Descriptor& optimizer;
  long generation = 0;
  std::string uid;
  bool apply = false;  // Apply mode; Recommend writes nothing

  // Never planned (no plan in its status): under spec.scaleToZero it is created asleep.
  bool NewPipeline() const { return !o.status.plan.has_value(); }
};

Decision Invalid(const Observed& o, const std::vector<api::FieldError>& errors, long generation) {
  Decision d;
  d.status = o.status;
  std::string message;
  for (size_t i = 0; i < errors.size() && i < kMaxErrorsInMessage; ++i) {
    message += (i ? "; " : "") + errors[i].ToString();
  }
  if (errors.size() > kMaxErrorsInMessage) {
    message += StrFormat("; and %zu more", errors.size() - kMaxErrorsInMessage);
  }
  SetCondition(d.status.conditions, "Ready", false, reason::kInvalidSpec, message, generation,
               o.now);
  d.status.observed_generation = generation;
  return d;  // no writes, no requeue: nothing changes until the spec does
}

// Each task of the plan as the Deployment it runs in, with what runs there now.
std::vector<PlannedDeployment> Place(const model::Pipeline& pipeline, const model::Plan& plan,
                                     const Deployments& deployments) {
  std::vector<PlannedDeployment> out;
  const std::vector<double> budgets = optimizer::TaskBudgetsMs(pipeline, 1);
  for (const model::TaskPlan& t : plan.tasks) {
    const int ti = pipeline.TaskIndex(t.task);
    const model::Task& task = pipeline.spec.tasks[ti];
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
    std::optional<api::ManagedFields> now;
    if (auto it = deployments.find(p.name); it != deployments.end()) {
      now = api::ReadManagedFields(it->second, variant->batch_env);
      p.current = now->replicas;
      p.running = api::RunningReplicas(it->second);
    }
    p.server_queue = ServerQueueFor(*variant, variant->FindProfile(hw.name), t,
                                    now ? &*now : nullptr, budgets[ti]);
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

// The conditions while the load is not known: MetricsAvailable says why.
void HoldConditions(const Context& c, Decision& d) {
  const Observed& o = c.o;
  std::vector<model::Condition>& conditions = d.status.conditions;
  std::string why;
  if (!o.metrics.ok()) {
    why = o.metrics.error().message;
  } else {
    for (const auto& m : o.metrics->missing) why += (why.empty() ? "missing " : ", ") + m;
  }
  SetCondition(conditions, "MetricsAvailable", false,
               o.metrics.ok() ? reason::kSeriesMissing : reason::kMetricsUnavailable, why,
               c.generation, o.now);
  SetCondition(conditions, "Ready", true, reason::kReconciled,
               "holding what runs until the load is known", c.generation, o.now);
  if (ConditionStatus(conditions, "PlanApplied").empty()) {
    SetCondition(conditions, "PlanApplied", false, reason::kHeld,
                 c.pipeline.spec.scale_to_zero
                     ? "no load measured yet: new tasks start at 0 (asleep) until a request"
                     : "no load measured yet: new tasks start at the plan for no load",
                 c.generation, o.now);
  }
}

// Without the load there is nothing to plan from: hold what runs, never scale down. A task with
// no Deployment yet starts at the plan for spec.minRate (none: no load), so a new pipeline runs
// before its first request (at 0 under spec.scaleToZero: it is created asleep); a task that runs
// anything keeps it, so that an idle plan that differs from the one already created (a tie between
// classes) never adds Deployments. Zero traffic is not this case: a series that reads 0 is load 0,
// and is planned for.
void Hold(const Context& c, Decision& d) {
  const Observed& o = c.o;
  d.requeue_after_seconds =
      std::min(c.pipeline.spec.interval_seconds,
               c.NewPipeline() ? kFirstMetricsRetrySeconds : kMetricsRetrySeconds);
  HoldConditions(c, d);
  Spend spend = RunningSpend(c.pipeline, o.deployments);
  if (c.apply) {
    model::Plan idle = c.optimizer.solve(c.pipeline, api::AtLeastMinRate(c.pipeline, {}), {});
    optimizer::ApplyReplicaFloors(c.pipeline, idle);
    std::vector<PlannedDeployment> planned = Place(c.pipeline, idle, o.deployments);
    std::erase_if(planned, [&](const PlannedDeployment& p) {
      return TaskRuns(c.pipeline, *p.task, o.deployments);
    });
    // A new pipeline that may sleep is created asleep (JudgeSleep's new_pipeline): its router
    // holds the first requests, and the look that sees them wakes it, sized for them.
    if (c.pipeline.spec.scale_to_zero && c.NewPipeline()) {
      for (PlannedDeployment& p : planned) p.planned = p.target = 0;
    }
    d.writes = PlanWrites(c.pipeline, c.uid, o.deployments, planned);
    spend += TargetSpend(planned);
  }
  d.status.total_replicas = spend.replicas;
  d.status.cost_per_hour = spend.cost_per_hour;
}

// Stabilizes each planned Deployment's replicas against the recent recommendations, after
// recording this one.
void Stabilize(const model::Pipeline& pipeline, double now, std::vector<PlannedDeployment>& planned,
               std::vector<Recommendation>& history) {
  Recommendation r{now, {}};
  for (const PlannedDeployment& p : planned) r.replicas[p.name] = p.planned;
  Remember(history, std::move(r), pipeline.spec.behavior);
  for (PlannedDeployment& p : planned) {
    p.target =
        reconciler::Stabilize(history, p.name, p.planned, p.current, pipeline.spec.behavior, now);
  }
}

// The replicas `planned` sets for `hardware_class`, after stabilization.
int Targets(const std::vector<PlannedDeployment>& planned, const std::string& hardware_class) {
  int targets = 0;
  for (const PlannedDeployment& p : planned) {
    if (p.hardware_class->name == hardware_class) targets += p.target;
  }
  return targets;
}

// What the pipeline needs of a class is at least what it holds after its scale-down window: the
// replicas it keeps for the load that just left (a burst that returns) are part of its claim.
void ClaimWhatTheWindowKeeps(const std::vector<PlannedDeployment>& planned,
                             std::map<std::string, ClassNeed>& needs) {
  for (auto& [name, need] : needs) need.replicas = std::max(need.replicas, Targets(planned, name));
}

// What the class cannot hold is given up at once: the scale-down window waits out a falling load,
// not another pipeline's claim (the arbiter's share) nor the plan's own replicas of another task
// or variant that need the room. On the demo's full nodes Loki moved replicas between tasks and
// variants while the window kept the old ones: its new pods waited Pending for room for the
// window's five minutes (5 of 13 pods at a steady 100 requests/s). So of a class over its limit,
// the window keeps only what fits: the replicas it holds above the plan are given up, in the
// plan's order, until the class's targets fit (all of them, the first version, restarted twice
// the pods under bursts and lost 2-4% of the goodput there). This took the brake off Loki's
// variant changes too; they roll now, a quarter of the pods at a time (optimizer/loki.h).
void GiveUpWhatDoesNotFit(const Observed& o, std::vector<PlannedDeployment>& planned) {
  if (!o.capacity) return;
  for (const model::ClassCapacity& c : o.capacity->classes) {
    int over = Targets(planned, c.hardware_class) - c.Limit();
    for (PlannedDeployment& p : planned) {
      if (over <= 0) break;
      if (p.hardware_class->name != c.hardware_class || p.target <= p.planned) continue;
      const int cut = std::min(p.target - p.planned, over);
      p.target -= cut;
      over -= cut;
    }
  }
}

// What the pipeline's Deployments outside the plan still run: the budget counts them.
Spend OthersSpend(const model::Pipeline& pipeline, const Deployments& deployments,
                  const std::vector<PlannedDeployment>& planned) {
  std::set<std::string> in_plan;
  for (const PlannedDeployment& p : planned) in_plan.insert(p.name);
  return RunningSpend(pipeline, deployments, in_plan);
}

// The PlanApplied condition, and the writes themselves unless in Recommend mode.
void Apply(const Context& c, const GuardOutcome& guard, std::vector<DeploymentWrite> writes,
           Decision& d) {
  std::vector<model::Condition>& conditions = d.status.conditions;
  if (!c.apply) {
    SetCondition(conditions, "PlanApplied", false, reason::kRecommendMode,
                 writes.empty() ? "the Deployments match the plan; nothing is written"
                                : StrFormat("%zu Deployment changes recommended; nothing is "
                                            "written in Recommend mode",
                                            writes.size()),
                 c.generation, c.o.now);
    return;
  }
  d.writes = std::move(writes);
  if (guard.waiting > 0) {
    SetCondition(conditions, "PlanApplied", false, reason::kScaleInFirst,
                 StrFormat("%d scale-outs wait for the scale-ins to finish: running both would "
                           "exceed the budget",
                           guard.waiting),
                 c.generation, c.o.now);
  } else {
    SetCondition(conditions, "PlanApplied", true, reason::kApplied,
                 "the Deployments match the plan", c.generation, c.o.now);
  }
}

// status.observed: the rates planned from, and what the router measured.
model::ObservedLoad ObservedStatus(const Context& c, const model::Plan& plan,
                                   const DemandStep& step) {
  const model::MetricsSnapshot& metrics = *c.o.metrics;
  model::ObservedLoad out{.path_rates_rps = metrics.path_rates_rps,
                          .demand_rps = std::nullopt,
                          .arrival_rate_rps = metrics.arrival_rate_rps};
  if (c.optimizer.memory.demand_ewma) out.demand_rps = step.demand.rps;
  if (metrics.data_plane) {
    out.data_plane = DataPlaneStatus(c.pipeline, plan, *metrics.data_plane);
  }
  if (step.mix) out.query_sizes = QueryMixStatus(*step.mix);
  out.profiles = step.profiles.observed;
  return out;
}

// status.plan, the PlanChanged event and the solver record when a Deployment changes, the
// totals and what was observed.
void Report(const Context& c, const model::Plan& plan,
            const std::vector<PlannedDeployment>& planned, const Spend& spend,
            const DemandStep& step, Decision& d) {
  model::AppliedPlan applied = PlanStatus(plan, planned);
  // Predicted latencies move with every rate and are status, not news.
  if (const std::string diff =
          PlanDiff(d.status.plan ? &*d.status.plan : nullptr, applied, c.optimizer.placement);
      !diff.empty()) {
    d.events.push_back(
        StrFormat("%s: %d replicas, $%.3f/h: ", std::string(c.optimizer.name).c_str(),
                  spend.replicas, spend.cost_per_hour) +
        diff);
    d.status.solver = model::SolverRecord{.name = std::string(c.optimizer.name),
                                          .status = plan.report.status,
                                          .objective = plan.report.objective,
                                          .duration_ms = 0};  // the reconciler times the decision
  }
  d.status.plan = std::move(applied);
  d.status.total_replicas = spend.replicas;
  d.status.cost_per_hour = spend.cost_per_hour;
  d.status.observed = ObservedStatus(c, plan, step);
}

// Some path's rate is above the one the last status reported (`observed`, whatever wrote it) by
// more than noise, or this is the first reading: a load that has just begun reads low in windows
// that are still filling.
bool LoadRising(const std::optional<model::ObservedLoad>& observed,
                const model::MetricsSnapshot& metrics) {
  if (!observed || observed->path_rates_rps.empty()) return true;
  const std::map<std::string, double>& before = observed->path_rates_rps;
  return std::ranges::any_of(
      metrics.path_rates_rps, [&](const std::pair<const std::string, double>& path_rate) {
        const auto it = before.find(path_rate.first);
        const double was = it != before.end() ? it->second : 0;
        return path_rate.second > was + kRiseFloorRps && MeasurementMoved(was, path_rate.second);
      });
}

// Pods the scheduler cannot place: the status says which Deployment waits on what, PlanApplied
// says Unschedulable, and a Warning event goes out when the list changes (not at every look).
void ReportUnschedulable(const Context& c, Decision& d) {
  std::set<std::string> before;
  for (const model::Unschedulable& u : d.status.unschedulable) before.insert(u.deployment);
  d.status.unschedulable.clear();
  if (c.o.capacity) d.status.unschedulable = c.o.capacity->unschedulable;
  if (d.status.unschedulable.empty()) return;
  std::string message;
  for (const model::Unschedulable& u : d.status.unschedulable) {
    message += StrFormat("%s%s: %d pods wait: %s", message.empty() ? "" : "; ",
                         u.deployment.c_str(), u.pods, u.message.c_str());
  }
  SetCondition(d.status.conditions, "PlanApplied", false, reason::kUnschedulable, message,
               c.generation, c.o.now);
  // News is a Deployment that starts to wait; the scheduler's counts of nodes in its message
  // move with every node that joins or leaves.
  if (std::ranges::any_of(d.status.unschedulable, [&](const model::Unschedulable& u) {
        return !before.contains(u.deployment);
      })) {
    d.warnings.push_back({reason::kUnschedulable, message});
  }
}

// Pods the API server refuses to create (a Deployment's ReplicaFailure): no plan is applied
// until someone fixes what it names, so PlanApplied says so, and a Warning event goes out when
// the message changes. Read from the Deployments each look: it needs no memory.
void ReportRefusedPods(const Context& c, Decision& d) {
  std::string message;
  for (const auto& [name, deployment] : c.o.deployments) {
    if (deployment.replica_failure.empty()) continue;
    message += StrFormat("%s%s: the API server refuses its pods: %s", message.empty() ? "" : "; ",
                         name.c_str(), deployment.replica_failure.c_str());
  }
  if (message.empty()) return;
  const bool news = std::ranges::none_of(c.o.status.conditions, [&](const model::Condition& k) {
    return k.type == "PlanApplied" && k.reason == reason::kPodsRefused && k.message == message;
  });
  SetCondition(d.status.conditions, "PlanApplied", false, reason::kPodsRefused, message,
               c.generation, c.o.now);
  if (news) d.warnings.push_back({reason::kPodsRefused, message});
}

// What the pipeline yields of one class, for Yielded's message.
std::string YieldedMessage(const Yielded& y) {
  std::string holders;
  for (const auto& [holder, pods] : y.holders) {
    holders += StrFormat("%s%s (%d)", holders.empty() ? "" : ", ", holder.c_str(), pods);
  }
  if (y.share) {
    return StrFormat(
        "%s: held to a share of %d of the %d replicas its nodes hold; the others' "
        "shares: %s",
        y.hardware_class.c_str(), *y.share, y.pool, holders.c_str());
  }
  return StrFormat("%s: no room left; pods of a higher priority hold it: %s",
                   y.hardware_class.c_str(), holders.c_str());
}

// A class full for the pipeline with pods of a higher priority on its nodes, or whose pool the
// arbiter divides with the pipeline held below what it would take: Yielded says to whom, and a
// Normal event when it starts or the holders change; gone when nothing is yielded.
void ReportYielded(const Context& c, Decision& d) {
  static const std::vector<Yielded> kNone;
  std::string message;
  const char* why = reason::kFairShare;
  for (const Yielded& y : c.o.capacity ? c.o.capacity->yielded : kNone) {
    message += (message.empty() ? "" : "; ") + YieldedMessage(y);
    if (!y.share) why = reason::kHigherPriority;
  }
  if (message.empty()) {
    RemoveCondition(d.status.conditions, "Yielded");
    return;
  }
  const bool news = std::ranges::none_of(d.status.conditions, [&](const model::Condition& k) {
    return k.type == "Yielded" && k.message == message;
  });
  SetCondition(d.status.conditions, "Yielded", true, why, message, c.generation, c.o.now);
  if (news) d.notices.push_back({why, message});
}

// QuerySizesShifted follows the status, as PlanChanged does: a mix adopted in memory whose
// writes failed is announced by the next reconcile that writes it, and once only.
void NoticeMixShift(const Context& c, const DemandStep& step, Decision& d) {
  if (!step.mix || step.mix->memory.adopted.empty()) return;
  const auto mix = [](const model::PipelineStatus& s) {
    return s.memory ? s.memory->query_mix : std::vector<model::QuerySize>{};
  };
  if (mix(c.o.status) == mix(d.status)) return;
  d.notices.push_back({reason::kQuerySizesShifted,
                       StrFormat("the router's query sizes moved more than %.2f from the planned "
                                 "mix: planning for %s",
                                 kMixShift, MixText(step.mix->planned).c_str())});
}

// The profiles measured beyond tolerance in `status` as last reported.
std::set<model::ProfileKey> Drifted(const model::PipelineStatus& status, double tolerance) {
  std::set<model::ProfileKey> out;
  if (!status.observed) return out;
  for (const model::ObservedProfile& p : status.observed->profiles) {
    if (p.ratio && std::abs(*p.ratio - 1) > tolerance) out.insert(p.key);
  }
  return out;
}

// ProfileAccurate; a Warning when a profile starts to drift; a notice when the plan starts from
// other measured profiles. Both follow the status, as QuerySizesShifted does.
void ReportProfiles(const Context& c, const DemandStep& step, Decision& d) {
  std::vector<model::Condition>& conditions = d.status.conditions;
  const model::ProfilesSpec& spec = c.pipeline.spec.profiles;
  // Without a router nothing measures the batches: no condition rather than one Unknown for good.
  if (spec.learn == model::ProfileLearning::kOff || !c.pipeline.spec.router) {
    RemoveCondition(conditions, "ProfileAccurate");
    return;
  }
  const ProfileVerdict v = JudgeProfiles(c.pipeline, step.profiles);
  SetConditionValue(
      conditions, "ProfileAccurate", !v.known ? "Unknown" : (v.accurate ? "True" : "False"),
      !v.known ? reason::kNotMeasured : (v.accurate ? reason::kMeasured : reason::kDrift),
      v.message, c.generation, c.o.now);
  const std::set<model::ProfileKey> before = Drifted(c.o.status, spec.tolerance);
  if (std::ranges::any_of(step.profiles.drifted,
                          [&](const model::ProfileKey& k) { return !before.contains(k); })) {
    d.warnings.push_back({reason::kProfileDrift, v.message});
  }
  const auto corrections = [](const model::PipelineStatus& s) {
    return s.memory ? s.memory->profiles : std::vector<model::ProfileCorrection>{};
  };
  if (corrections(c.o.status) == corrections(d.status)) return;
  std::string message;
  for (const model::ProfileCorrection& k : step.profiles.corrections) {
    message += StrFormat("%s%s at %.2fx its declared profile", message.empty() ? "" : "; ",
                         ProfileName(k.key).c_str(), k.ratio);
  }
  d.notices.push_back(
      {reason::kProfileCorrected, message.empty() ? "planning from the declared profiles again"
                                                  : "planning from measured profiles: " + message});
}

// The decision's start: the status as read at this generation, the router's objects, and what
// the cluster can place.
Decision Start(const Context& c) {
  const Observed& o = c.o;
  Decision d;
  d.status = o.status;
  d.status.observed_generation = c.generation;
  d.requeue_after_seconds = c.pipeline.spec.interval_seconds;
  d.memory = o.memory;
  d.status.capacity.reset();
  if (o.capacity) d.status.capacity = o.capacity->classes;
  if (c.apply) {
    // Before the metrics: the router is where they come from.
    const std::optional<double> arrival =
        o.metrics.ok() ? o.metrics->arrival_rate_rps : std::nullopt;
    d.router = RouterWrites(c.pipeline, c.uid, o.router_cluster_role, o.router, arrival);
    d.router_pipeline =
        RouterPipelineWrite(c.pipeline, c.uid, o.routing_config_map, o.router_pipeline);
  }
  return d;
}

// The Deployment writes for the planned Deployments and the pipeline's others, and in Apply mode
// the changes made outside the operator they put back and the routing ConfigMap.
std::vector<DeploymentWrite> Writes(const Context& c, const model::Plan& plan,
                                    const std::vector<PlannedDeployment>& planned, Decision& d) {
  const Observed& o = c.o;
  std::vector<DeploymentWrite> writes = PlanWrites(c.pipeline, c.uid, o.deployments, planned);
  std::set<std::string> names;
  for (const PlannedDeployment& p : planned) names.insert(p.name);
  for (DeploymentWrite& w : LeftoverWrites(c.pipeline, o.deployments, names)) {
    writes.push_back(std::move(w));
  }
  if (c.apply) {
    d.reverts = FindReverts(o.status.plan ? &*o.status.plan : nullptr, o.deployments, planned);
    // Also when the plan hands nothing over but a ConfigMap exists: its stale parts go.
    if (c.optimizer.data_plane != optimizer::DataPlane::kNone || c.pipeline.RouterBatches() ||
        o.routing_config_map) {
      d.routing = RoutingWrite(c.pipeline, c.uid, o.routing_config_map, plan);
    }
  }
  return writes;
}

// The plan's batch changes that wait for a rollout, in PlanApplied.
void ReportHeldBatches(const Context& c, const std::vector<std::string>& held, Decision& d) {
  if (!c.apply || held.empty()) return;
  std::string waiting;
  for (const std::string& name : held) waiting += (waiting.empty() ? "" : ", ") + name;
  SetCondition(d.status.conditions, "PlanApplied", false, reason::kBatchHeld,
               "batch size changes wait: " + waiting, c.generation, c.o.now);
  // Look again soon: the held change goes out as soon as the rollout ends.
  d.requeue_after_seconds = std::min(*d.requeue_after_seconds, 2.0);
}

std::string Names(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + (n.empty() ? "(all)" : n);
  return out;
}

void SetIdleCondition(const Context& c, const Sleep& sleep, Decision& d) {
  const model::ScaleToZero& rule = *c.pipeline.spec.scale_to_zero;
  std::vector<model::Condition>& conditions = d.status.conditions;
  if (sleep.idle) {
    SetCondition(conditions, "Idle", true, reason::kNoRequests,
                 StrFormat("no request for %.0f s, or since it was created: every model "
                           "Deployment is at 0; the router "
                           "holds the next request while its path wakes",
                           rule.after_idle_seconds),
                 c.generation, c.o.now);
    return;
  }
  std::string message;
  if (!sleep.sleeping_tasks.empty()) {
    message = "paths " + Names(sleep.memory.sleeping_paths) + " sleep: tasks " +
              Names(sleep.sleeping_tasks) + " at 0";
  }
  std::set<std::string> ahead;
  for (const auto& [path, w] : sleep.memory.awake_ahead) ahead.insert(path);
  if (!ahead.empty()) {
    message += (message.empty() ? "" : "; ") + std::string("paths ") + Names(ahead) +
               " awake ahead of the load their forecast expects";
  }
  const char* why = !ahead.empty()                 ? reason::kAwakeAhead
                    : sleep.sleeping_tasks.empty() ? reason::kServing
                                                   : reason::kSleeping;
  SetCondition(conditions, "Idle", false, why, message, c.generation, c.o.now);
}

// Events for the paths that fell asleep, woke, woke ahead of a forecast or saw it missed.
void NoticeSleep(const Context& c, const Sleep& sleep, Decision& d) {
  const model::ScaleToZero& rule = *c.pipeline.spec.scale_to_zero;
  const std::set<std::string>& before = c.o.memory.sleep.sleeping_paths;
  std::set<std::string> fell, woke;  // a forecast's wake and its miss have their own events
  for (const std::string& path : sleep.memory.sleeping_paths) {
    if (!before.contains(path) && !sleep.forecast_missed.contains(path)) fell.insert(path);
  }
  for (const std::string& path : before) {
    if (!sleep.memory.sleeping_paths.contains(path) && !sleep.woke_ahead.contains(path)) {
      woke.insert(path);
    }
  }
  if (!fell.empty()) {
    d.notices.push_back(
        {reason::kSleeping,
         (c.NewPipeline() ? StrFormat("paths %s have had no request since the pipeline was "
                                      "created: ",
                                      Names(fell).c_str())
                          : StrFormat("paths %s had no request for %.0f s: ", Names(fell).c_str(),
                                      rule.after_idle_seconds)) +
             (sleep.sleeping_tasks.empty() ? "their tasks stay for the paths still served"
                                           : "tasks " + Names(sleep.sleeping_tasks) + " at 0")});
  }
  if (!woke.empty()) {
    double held = 0;
    for (const auto& [path, n] : c.o.metrics->door_waiting) held += n;
    d.notices.push_back({reason::kWoken, StrFormat("paths %s woke: %.0f requests held at the door",
                                                   Names(woke).c_str(), held)});
  }
  for (const std::string& path : sleep.woke_ahead) {
    const model::WakeForecast& w = sleep.memory.awake_ahead.at(path);
    d.notices.push_back(
        {reason::kWokenAhead,
         StrFormat("path %s woke ahead of its load: it returned at this time in each of the "
                   "last %d periods of %.0f s; planned for %.3g requests per second, awake "
                   "without a request for %.0f s at most",
                   Names({path}).c_str(), rule.wake_ahead.confirmations,
                   rule.wake_ahead.period_seconds, w.rate_rps, w.until - c.o.now)});
  }
  for (const std::string& path : sleep.forecast_missed) {
    d.notices.push_back(
        {reason::kForecastMissed,
         StrFormat("no request came to path %s in its forecast window: it sleeps again, and "
                   "wakes ahead at this time only after the load has returned at it again",
                   Names({path}).c_str())});
  }
}

// The tasks no awake path needs go to 0 at once: the idle time was their window.
void PutToSleep(const Sleep& sleep, std::vector<PlannedDeployment>& planned) {
  for (PlannedDeployment& p : planned) {
    if (sleep.sleeping_tasks.contains(p.task->name)) p.planned = p.target = 0;
  }
}

// From the plan to the Deployments: placed, stabilized, sleeping tasks at 0, batch changes held
// during rollouts, within the budget; written (in Apply mode) and reported.
void Enact(const Context& c, model::Plan plan, const DemandStep& step,
           const std::optional<Sleep>& sleep, Decision& d) {
  const Observed& o = c.o;
  std::vector<PlannedDeployment> planned = Place(c.pipeline, plan, o.deployments);
  Stabilize(c.pipeline, o.now, planned, d.memory.history);
  ClaimWhatTheWindowKeeps(planned, d.needs);
  GiveUpWhatDoesNotFit(o, planned);
  if (sleep) PutToSleep(*sleep, planned);
  const std::vector<std::string> held =
      HoldBatchesDuringRollouts(c.pipeline, o.deployments, *o.metrics, o.capacity, planned);
  const GuardOutcome guard =
      GuardBudget(c.pipeline.spec.budget, planned, OthersSpend(c.pipeline, o.deployments, planned));
  const Spend spend = TargetSpend(planned);
  SetFeasible(d.status.conditions, plan, guard, spend, c.generation, o.now);
  Apply(c, guard, Writes(c, plan, planned, d), d);
  ReportHeldBatches(c, held, d);
  if (c.apply) ReportUnschedulable(c, d);
  if (c.apply) ReportRefusedPods(c, d);
  ReportYielded(c, d);
  SetCondition(d.status.conditions, "Ready", true, reason::kReconciled, "", c.generation, o.now);
  Report(c, plan, planned, spend, step, d);
  if (sleep) {
    SetIdleCondition(c, *sleep, d);
    NoticeSleep(c, *sleep, d);
    d.memory.sleep = sleep->memory;
  } else {
    RemoveCondition(d.status.conditions, "Idle");
  }
  d.status.memory = MemoryToStatus(d.memory, c.optimizer);
  NoticeMixShift(c, step, d);
  ReportProfiles(c, step, d);
  d.plan = std::move(plan);
}

// Per class, the replicas of `plan` and its tasks with any.
std::map<std::string, ClassNeed> NeedsOf(const model::Plan& plan) {
  std::map<std::string, ClassNeed> out;
  std::set<std::pair<std::string, std::string>> seen;  // (class, task)
  for (const model::TaskPlan& t : plan.tasks) {
    if (t.replicas <= 0) continue;
    ClassNeed& need = out[t.hardware_class];
    need.replicas += t.replicas;
    if (seen.emplace(t.hardware_class, t.task).second) ++need.tasks;
  }
  return out;
}

std::map<std::string, ClassNeed> WithRate(const DemandStep& step,
                                          std::map<std::string, ClassNeed> needs) {
  double rps = 0;
  for (const auto& [path, rate] : step.workload.path_rates_rps) rps += rate;
  for (auto& [name, need] : needs) need.rps = rps;
  return needs;
}

// Decision::needs. A class whose limit the plan reached may need more than it was given: a
// second plan, with every such class allowed its whole pool, says how much.
std::map<std::string, ClassNeed> Needs(const Context& c, const model::Pipeline& measured,
                                       const DemandStep& step, const model::Plan& plan) {
  std::map<std::string, ClassNeed> needs;
  if (!c.o.capacity) return needs;
  const std::map<std::string, ClassNeed> planned = NeedsOf(plan);
  model::Pipeline whole = measured;
  std::vector<std::string> capped;
  for (model::HardwareClass& hw : whole.spec.hardware_classes) {
    const model::ClassCapacity* room = c.o.capacity->Find(hw.name);
    if (room == nullptr || room->pool == 0) continue;
    const auto it = planned.find(hw.name);
    needs[hw.name] = it == planned.end() ? ClassNeed{} : it->second;
    const model::HardwareClass& declared =
        c.pipeline.spec
            .hardware_classes[static_cast<size_t>(c.pipeline.HardwareClassIndex(hw.name))];
    const int most = std::min(declared.max_replicas.value_or(room->pool), room->pool);
    const int limit = hw.max_replicas.value_or(most);
    if (needs[hw.name].replicas < limit || limit >= most) continue;
    hw.max_replicas = most;
    capped.push_back(hw.name);
  }
  if (capped.empty()) return WithRate(step, needs);
  const model::Plan unbounded = c.optimizer.solve(whole, step.workload, step.input);
  if (unbounded.tasks.empty()) return WithRate(step, needs);  // no answer in time: as given
  const std::map<std::string, ClassNeed> more = NeedsOf(unbounded);
  for (const std::string& name : capped) {
    const auto it = more.find(name);
    needs[name] = it == more.end() ? ClassNeed{} : it->second;
  }
  return WithRate(step, needs);
}

}  // namespace

Decision Decide(const Observed& o, const api::ParsedPipeline& parsed) {
  const api::ObjectMeta& meta = o.meta;
  if (!parsed.pipeline) return Invalid(o, parsed.errors, meta.generation);
  const Context c{.o = o,
                  .pipeline = *parsed.pipeline,
                  .optimizer = optimizer::OptimizerOf(parsed.pipeline->spec),
                  .generation = meta.generation,
                  .uid = meta.uid,
                  .apply = parsed.pipeline->spec.mode == model::Mode::kApply};
  Decision d = Start(c);
  if (!o.metrics.ok() || !o.metrics->Complete()) {
    Hold(c, d);
    ReportUnschedulable(c, d);
    ReportRefusedPods(c, d);
    ReportYielded(c, d);
    return d;
  }
  SetCondition(d.status.conditions, "MetricsAvailable", true, reason::kMetricsRead, "",
               c.generation, o.now);
  if (LoadRising(d.status.observed, *o.metrics)) {
    d.requeue_after_seconds = std::min(*d.requeue_after_seconds, kRisingLookSeconds);
  }
  std::optional<Sleep> sleep;
  if (c.pipeline.spec.scale_to_zero) {
    sleep = JudgeSleep(c.pipeline, *o.metrics, o.memory.sleep, o.now, c.NewPipeline());
    if (sleep->look_after_seconds) {
      d.requeue_after_seconds = std::min(*d.requeue_after_seconds, *sleep->look_after_seconds);
    }
  }
  // Requests held at the door are demand no rate has counted yet.
  model::MetricsSnapshot metrics = *o.metrics;
  metrics.path_rates_rps =
      PlannedRates(c.pipeline, metrics, sleep ? sleep->memory : o.memory.sleep, o.now);
  if (sleep) NoteReturnRates(c.pipeline, metrics.path_rates_rps, metrics, o.now, sleep->memory);
  DemandStep step =
      StepDemand(c.pipeline, c.optimizer, o.memory.demand, metrics, o.deployments, o.now);
  step.input.milp_solver = o.milp_solver;
  if (c.optimizer.memory.holds_running_variants && o.status.plan) {
    step.input.applied_batches = AppliedBatches(*o.status.plan, step.input.running_variants);
  }
  // A surge (demand.h) is looked at again soon, as a rising load is.
  d.surges = step.surges;
  if (!step.surges.empty()) {
    d.requeue_after_seconds = std::min(*d.requeue_after_seconds, kSurgeLookSeconds);
  }
  d.memory.demand = step.demand;
  // Plan for the room the cluster has: Loki's "cluster is full" is the GPUs running out.
  model::Pipeline measured =
      o.capacity ? WithinCapacity(c.pipeline, *o.capacity, o.deployments) : c.pipeline;
  UseMeasured(measured, c.optimizer, *o.metrics, step);
  model::Plan plan = c.optimizer.solve(measured, step.workload, step.input);
  if (plan.report.status == model::SolveStatus::kInfeasible && c.optimizer.memory.slo_feedback) {
    // No room for the load, or for FA2's headroom: the misses a full cluster makes are not the
    // model's, nor once the load has come down (slo_feedback.h). The headroom stands as it was
    // and the measured rate is planned.
    d.memory.demand.headroom = o.memory.demand.headroom;
    HoldRaises(o.now, d.memory.demand.headroom);
    if (step.without_headroom) {
      step.workload = *std::move(step.without_headroom);
      plan = c.optimizer.solve(measured, step.workload, step.input);
    }
  }
  if (plan.tasks.empty()) {
    // The solver's time budget passed before any plan, or its process died: hold what runs
    // rather than read an empty plan as "scale everything to zero".
    const std::string why = plan.report.notes.empty() ? "" : " (" + plan.report.notes[0] + ")";
    SetCondition(
        d.status.conditions, "PlanApplied", false, reason::kHeld,
        "the optimizer found no plan within its time budget" + why + "; holding the current one",
        c.generation, o.now);
    return d;
  }
  if (c.optimizer.memory.slo_feedback) {
    d.headroom = HeadroomByPath(c.pipeline.spec, d.memory.demand.headroom);
  }
  if (c.optimizer.memory.holds_applied_batches) {
    HoldAppliedBatches(measured, step.workload, *o.metrics,
                       o.status.plan ? &*o.status.plan : nullptr, o.deployments, plan);
  }
  // Within the room the cluster has, as the plan: a floor past it says so in the plan's notes.
  optimizer::ApplyReplicaFloors(measured, plan);
  d.needs = Needs(c, measured, step, plan);
  Enact(c, std::move(plan), step, sleep, d);
  return d;
}

}  // namespace pipescale::reconciler
