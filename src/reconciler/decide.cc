#include "reconciler/decide.h"

#include <algorithm>
#include <cmath>

#include "api/deployment.h"
#include "api/pipeline_parse.h"
#include "common/strings.h"
#include "optimizer/pool.h"
#include "optimizer/problem.h"
#include "optimizer/solve.h"
#include "reconciler/conditions.h"

namespace pipescale::reconciler {
namespace {

using nlohmann::json;

constexpr size_t kMaxErrorsInMessage = 5;
constexpr double kMetricsRetrySeconds = 10;

double Round2(double v) { return std::round(v * 100) / 100; }

// Where a plan's task runs: the spec objects and the Deployment name.
struct Placement {
  const model::Task* task;
  const model::Variant* variant;
  const model::HardwareClass* hardware_class;
  std::string deployment;
};

Placement Place(const model::Pipeline& p, const model::TaskPlan& t) {
  const model::Task& task = p.spec.tasks[p.TaskIndex(t.task)];
  const model::Variant* variant = &task.variants.front();
  for (const auto& v : task.variants) {
    if (v.name == t.variant) variant = &v;
  }
  const model::HardwareClass& hw = p.spec.hardware_classes[p.HardwareClassIndex(t.hardware_class)];
  return {&task, variant, &hw, api::DeploymentName(p, task, *variant, hw.name)};
}

DeploymentWrite Create(const model::Pipeline& pipeline, const Observed& o, const Placement& p,
                       int replicas, int batch_size) {
  const api::Owner owner{.name = pipeline.name, .uid = o.object["metadata"].value("uid", "")};
  return {.kind = DeploymentWrite::Kind::kCreate,
          .name = p.deployment,
          .body = api::BuildDeployment(pipeline, owner, *p.task, *p.variant, *p.hardware_class,
                                       replicas, batch_size),
          .batch_env = p.variant->batch_env,
          .replicas = replicas,
          .batch_size = batch_size};
}

std::optional<int> CurrentReplicas(const Observed& o, const std::string& name,
                                   const std::string& batch_env) {
  auto it = o.deployments.find(name);
  if (it == o.deployments.end()) return std::nullopt;
  return api::ReadManagedFields(it->second, batch_env).replicas;
}

// Replicas a Deployment runs or asks for, whichever is more: pods of a scale-in still run
// until they are gone, and the budget counts them.
int RunningReplicas(const Observed& o, const std::string& name) {
  auto it = o.deployments.find(name);
  if (it == o.deployments.end()) return 0;
  const int asked = api::ReadManagedFields(it->second, "").replicas.value_or(0);
  const int running = it->second.value("status", json::object()).value("replicas", 0);
  return std::max(asked, running);
}

// MArk's inputs from what was observed: the rate series (one value per interval, bounded),
// the replicas running per (task, class), and the paths whose measured tail latency missed
// the SLO while the guard is not cooling down.
model::Plan PlanMark(const model::Pipeline& pipeline, const model::Workload& workload,
                     const Observed& o, bool advance, Demand& demand) {
  constexpr size_t kMaxSeries = 2880;  // 8 hours at 10 s
  demand.series = o.demand.series;
  if (advance) {
    for (const auto& [path, rate] : workload.path_rates_rps) {
      std::vector<double>& s = demand.series[path];
      s.push_back(rate);
      if (s.size() > kMaxSeries) s.erase(s.begin(), s.end() - kMaxSeries);
    }
  }
  optimizer::MarkInput input;
  input.history = demand.series;
  for (const model::Task& task : pipeline.spec.tasks) {
    const model::Variant& v = task.MostAccurateVariant();
    for (const model::Profile& profile : v.profiles) {
      const std::string name = api::DeploymentName(pipeline, task, v, profile.hardware_class);
      auto it = o.deployments.find(name);
      if (it == o.deployments.end()) continue;
      const api::ManagedFields f = api::ReadManagedFields(it->second, v.batch_env);
      const std::string key = task.name + "/" + profile.hardware_class;
      if (f.replicas) input.running[key] = *f.replicas;
      if (f.batch_size) input.running_batch[key] = *f.batch_size;
    }
  }
  demand.guard_quiet_until = o.demand.guard_quiet_until;
  if (o.now >= demand.guard_quiet_until && o.metrics.ok()) {
    for (const model::Path& path : pipeline.spec.paths) {
      auto it = o.metrics->path_latency_ms.find(path.name);
      if (it != o.metrics->path_latency_ms.end() && it->second > path.slo_ms) {
        input.late_paths.insert(path.name);
      }
    }
    if (!input.late_paths.empty()) {
      // Judge again once the added replicas can serve, and never sooner than three intervals.
      demand.guard_quiet_until = o.now + std::max(3 * pipeline.spec.interval_seconds,
                                                  optimizer::SlowestStartupSeconds(pipeline.spec));
    }
  }
  return optimizer::SolveMark(pipeline, workload, input);
}

// HPA semantics: scale up no further than the lowest recommendation within the scale-up
// window, down no further than the highest within the scale-down window.
int Stabilize(const std::vector<Recommendation>& history, const std::string& name, int desired,
              std::optional<int> current, const model::Behavior& behavior, double now) {
  if (!current || desired == *current) return desired;
  const bool up = desired > *current;
  const double window = up ? behavior.scale_up_window_seconds : behavior.scale_down_window_seconds;
  int bound = desired;
  for (const Recommendation& r : history) {
    if (r.at < now - window) continue;
    auto it = r.replicas.find(name);
    if (it == r.replicas.end()) continue;
    bound = up ? std::min(bound, it->second) : std::max(bound, it->second);
  }
  return up ? std::max(*current, bound) : std::min(*current, bound);
}

json PlanStatus(const model::Plan& plan, const std::vector<Placement>& placements,
                const std::vector<int>& targets) {
  json tasks = json::array();
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    const auto& t = plan.tasks[i];
    tasks.push_back({{"task", t.task},
                     {"variant", t.variant},
                     {"hardwareClass", t.hardware_class},
                     {"deployment", placements[i].deployment},
                     {"replicas", targets[i]},
                     {"batchSize", t.batch_size},
                     {"latencyMs", Round2(t.latency_ms)},
                     {"queueMs", Round2(t.queue_ms)}});
  }
  json paths = json::array();
  for (const auto& p : plan.paths) {
    paths.push_back({{"name", p.name},
                     {"sloMs", p.slo_ms},
                     {"predictedLatencyMs", Round2(p.predicted_latency_ms)}});
  }
  json out = {{"tasks", tasks}, {"paths", paths}};
  if (!plan.pools.empty()) {
    out["servedFraction"] = std::round(plan.served_fraction * 1e4) / 1e4;
    if (plan.upper_bound_qps > 0) out["upperBoundQps"] = Round2(plan.upper_bound_qps);
    if (!plan.forecast_rps.empty()) {
      json forecast = json::array();
      for (double r : plan.forecast_rps) forecast.push_back(Round2(r));
      out["forecast"] = {{"stepSeconds", plan.forecast_step_seconds}, {"rps", forecast}};
    }
  }
  if (plan.phase == model::Phase::kNone) return out;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    tasks[i]["loadRps"] = Round2(plan.tasks[i].load_rps);
    tasks[i]["budgetMs"] = Round2(plan.tasks[i].budget_ms);
  }
  out["tasks"] = tasks;
  out["phase"] = model::PhaseName(plan.phase);
  out["accuracy"] = std::round(plan.accuracy * 1e4) / 1e4;
  out["servedFraction"] = std::round(plan.served_fraction * 1e4) / 1e4;
  json variant_paths = json::array();
  for (const auto& v : plan.variant_paths) {
    variant_paths.push_back({{"path", v.path},
                             {"variants", v.variants},
                             {"share", std::round(v.share * 1e4) / 1e4},
                             {"accuracy", std::round(v.accuracy * 1e4) / 1e4}});
  }
  out["variantPaths"] = variant_paths;
  // The routing tables themselves are in the ConfigMap (api::RoutingConfigMapName).
  out["routing"] =
      json::parse(api::RoutingConfigMapData(plan)["routing.json"].get<std::string>())["tables"];
  return out;
}

// FA2 changes a batch size only together with the replicas, or when the running batch no
// longer meets the SLOs: every batch change restarts a Deployment's pods, and noise in the
// measured rate would otherwise flip between plans of equal replicas at every interval. Only
// the batches this operator applied (the status's plan) are kept; a hand edit is restored.
void KeepRunningBatches(const model::Pipeline& pipeline, const model::Workload& workload,
                        const Observed& o, model::Plan& plan) {
  if (plan.report.status == model::SolveStatus::kInfeasible) return;
  std::map<std::string, std::pair<int, int>> applied;  // deployment -> (replicas, batch)
  const json status = o.object.value("status", json::object());
  for (const auto& t : status.value("plan", json::object()).value("tasks", json::array())) {
    applied[t.value("deployment", "")] = {t.value("replicas", -1), t.value("batchSize", -1)};
  }
  const optimizer::Problem problem = optimizer::Compile(pipeline, workload);
  optimizer::Assignment assignment(problem.dnns.size());
  std::vector<const optimizer::Choice*> kept(plan.tasks.size(), nullptr);
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    const model::TaskPlan& t = plan.tasks[i];
    const Placement p = Place(pipeline, t);
    auto it = o.deployments.find(p.deployment);
    auto was = applied.find(p.deployment);
    if (it == o.deployments.end() || was == applied.end()) return;
    const api::ManagedFields f = api::ReadManagedFields(it->second, p.variant->batch_env);
    if (f.replicas != t.replicas || f.batch_size != was->second.second ||
        was->second.first != t.replicas) {
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
    plan.paths[r].predicted_latency_ms = optimizer::RouteLatencyMs(problem, assignment, r);
  }
}

// "detect 3->4 replicas, batch 8->8" for every Deployment whose replicas or batch changed.
std::string PlanDiff(const json& before, const json& after) {
  std::map<std::string, std::pair<int, int>> old;
  if (before.is_object() && before.contains("tasks")) {
    for (const auto& t : before["tasks"]) {
      old[t.value("deployment", "")] = {t.value("replicas", 0), t.value("batchSize", 0)};
    }
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
    // Loki's Deployments differ by variant, Kairos's and MArk's by hardware class.
    std::string label = t["task"].get<std::string>();
    if (t.contains("loadRps")) {
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

Decision Invalid(const Observed& o, const std::vector<api::FieldError>& errors, long generation) {
  Decision d;
  d.status = o.object.value("status", json::object());
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

}  // namespace

Decision Decide(const Observed& o) {
  const long generation = o.object["metadata"].value("generation", 0L);
  api::ParsedPipeline parsed = api::ParsePipeline(o.object.dump());
  if (!parsed.pipeline) return Invalid(o, parsed.errors, generation);
  model::Pipeline pipeline = std::move(*parsed.pipeline);

  Decision d;
  d.status = o.object.value("status", json::object());
  json& conditions = d.status["conditions"];
  d.status["observedGeneration"] = generation;
  d.requeue_after_seconds = pipeline.spec.interval_seconds;
  d.history = o.history;

  const bool apply = pipeline.spec.mode == model::Mode::kApply;
  const model::OptimizerKind kind = pipeline.spec.optimizer;
  const bool loki = kind == model::OptimizerKind::kLoki;
  const bool mark = kind == model::OptimizerKind::kMark;
  const optimizer::Algorithm algorithm = optimizer::AlgorithmFor(kind);
  const char* algorithm_name = optimizer::AlgorithmName(algorithm);
  d.demand = o.demand;

  // Without complete metrics there is nothing to plan from: hold what runs, never scale down.
  // Deployments that do not exist yet are created at the plan for no load (a scale-up).
  const bool metrics_ok = o.metrics.ok() && o.metrics->Complete();
  if (!metrics_ok) {
    // Look again soon: a new pipeline's series appear within a scrape or two, and a long
    // interval would leave it unplanned for all of it.
    d.requeue_after_seconds = std::min(pipeline.spec.interval_seconds, kMetricsRetrySeconds);
    std::string why;
    if (!o.metrics.ok()) {
      why = o.metrics.error().message;
    } else {
      for (const auto& m : o.metrics->missing) why += (why.empty() ? "missing " : ", ") + m;
    }
    SetCondition(conditions, "MetricsAvailable", false,
                 o.metrics.ok() ? reason::kSeriesMissing : reason::kMetricsUnavailable, why,
                 generation, o.now);
    SetCondition(conditions, "Ready", false, reason::kMetricsUnavailable,
                 "holding the current plan: " + why, generation, o.now);
    if (ConditionStatus(conditions, "PlanApplied").empty()) {
      SetCondition(conditions, "PlanApplied", false, reason::kHeld, "no plan yet", generation,
                   o.now);
    }
    if (apply) {
      const model::Plan idle = optimizer::Solve(pipeline, {}, algorithm);
      for (const auto& t : idle.tasks) {
        const Placement p = Place(pipeline, t);
        if (o.deployments.contains(p.deployment)) continue;
        d.writes.push_back(Create(pipeline, o, p, t.replicas, t.batch_size));
      }
    }
    return d;
  }
  SetCondition(conditions, "MetricsAvailable", true, reason::kMetricsRead, "", generation, o.now);

  model::Workload workload{o.metrics->path_rates_rps};
  const bool advance =
      o.demand.at == 0 || o.now - o.demand.at >= pipeline.spec.interval_seconds - 1e-6;
  if (advance) d.demand.at = o.now;
  if (loki) {
    // Loki plans for an EWMA of the demand (its alpha, 1 / (1 + 1.6)), and with the measured
    // multiplicative factors where the model servers report them.
    constexpr double kAlpha = 1 / 2.6;
    for (auto& [path, rate] : workload.path_rates_rps) {
      auto it = o.demand.rps.find(path);
      if (it == o.demand.rps.end()) continue;
      rate = advance ? kAlpha * rate + (1 - kAlpha) * it->second : it->second;
    }
    d.demand.rps = workload.path_rates_rps;
    for (auto& task : pipeline.spec.tasks) {
      for (auto& v : task.variants) {
        auto it = o.metrics->multiplicative_factors.find(task.name + "/" + v.name);
        if (it != o.metrics->multiplicative_factors.end()) v.multiplicative_factor = it->second;
      }
    }
  }
  model::Plan plan = mark ? PlanMark(pipeline, workload, o, advance, d.demand)
                          : optimizer::Solve(pipeline, workload, algorithm);
  if (plan.tasks.empty()) {
    // The solver's time budget passed before any plan: hold what runs rather than read an
    // empty plan as "scale everything to zero".
    SetCondition(conditions, "PlanApplied", false, reason::kHeld,
                 "the optimizer found no plan within its time budget; holding the current one",
                 generation, o.now);
    return d;
  }
  if (kind == model::OptimizerKind::kFa2) KeepRunningBatches(pipeline, workload, o, plan);

  // Stabilize each Deployment's replicas against the recent recommendations.
  std::vector<Placement> placements;
  Recommendation now{o.now, {}};
  for (const auto& t : plan.tasks) {
    placements.push_back(Place(pipeline, t));
    now.replicas[placements.back().deployment] = t.replicas;
  }
  d.history.push_back(now);
  const double keep = std::max(pipeline.spec.behavior.scale_down_window_seconds,
                               pipeline.spec.behavior.scale_up_window_seconds);
  std::erase_if(d.history, [&](const Recommendation& r) { return r.at < o.now - keep; });
  std::vector<int> targets;
  std::vector<std::optional<int>> current;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    current.push_back(
        CurrentReplicas(o, placements[i].deployment, placements[i].variant->batch_env));
    targets.push_back(Stabilize(d.history, placements[i].deployment, plan.tasks[i].replicas,
                                current.back(), pipeline.spec.behavior, o.now));
  }

  // Budget guard: never scale out past the budget; the SLO then gives way, and says so.
  auto totals = [&](auto replicas_of) {
    int replicas = 0;
    double cost = 0;
    for (size_t i = 0; i < targets.size(); ++i) {
      replicas += replicas_of(i);
      cost += replicas_of(i) * placements[i].hardware_class->cost_per_hour;
    }
    return std::pair{replicas, cost};
  };
  auto over = [&](std::pair<int, double> t) {
    const auto& b = pipeline.spec.budget;
    return (b.max_replicas && t.first > *b.max_replicas) ||
           (b.cost_per_hour && t.second > *b.cost_per_hour + 1e-9);
  };
  auto hold_scale_outs = [&] {
    int held = 0;
    for (size_t i = 0; i < targets.size(); ++i) {
      // A Deployment still to be created is not held: it would start with nothing.
      if (current[i] && targets[i] > *current[i]) {
        targets[i] = *current[i];
        ++held;
      }
    }
    return held;
  };
  const bool over_budget = over(totals([&](size_t i) { return plan.tasks[i].replicas; }));
  if (over_budget) hold_scale_outs();
  // While replicas move between Deployments, the old ones run until they are gone: count each
  // at the larger of what runs and what is asked (others of the pipeline at what runs), and
  // let scale-outs wait for the scale-ins when both together would exceed the budget.
  auto in_transit = [&] {
    auto t = totals([&](size_t i) {
      return std::max(targets[i], RunningReplicas(o, placements[i].deployment));
    });
    for (const auto& [name, deployment] : o.deployments) {
      if (now.replicas.contains(name)) continue;
      const int running = RunningReplicas(o, name);
      const int hw = pipeline.HardwareClassIndex(deployment["metadata"]
                                                     .value("labels", json::object())
                                                     .value("pipescale.io/hardware-class", ""));
      t.first += running;
      if (hw >= 0) t.second += running * pipeline.spec.hardware_classes[hw].cost_per_hour;
    }
    return t;
  };
  int waiting = 0;
  if (!over_budget && over(in_transit())) {
    // The scale-ins the scale-outs wait for skip their stabilization window: waiting it out
    // would hold the new plan back for the whole window.
    for (size_t i = 0; i < targets.size(); ++i) {
      if (current[i] && plan.tasks[i].replicas < *current[i]) targets[i] = plan.tasks[i].replicas;
    }
    waiting = hold_scale_outs();
  }
  const auto [total_replicas, cost] = totals([&](size_t i) { return targets[i]; });

  if (over_budget) {
    SetCondition(conditions, "Feasible", false, reason::kOverBudget,
                 StrFormat("the plan needs more than the budget allows; scale-out held at %d "
                           "replicas, $%.3f/h",
                           total_replicas, cost),
                 generation, o.now);
  } else if (plan.phase == model::Phase::kOverloaded) {
    SetCondition(conditions, "Feasible", false, reason::kOverloaded,
                 StrFormat("the demand exceeds what the cluster serves within the SLOs even "
                           "with the fastest variants; serving %.1f%% of it",
                           100 * plan.served_fraction),
                 generation, o.now);
  } else if (plan.report.status == model::SolveStatus::kInfeasible) {
    std::string notes;
    for (const auto& n : plan.report.reasons) notes += (notes.empty() ? "" : "; ") + n;
    SetCondition(conditions, "Feasible", false, reason::kInfeasible,
                 "no plan meets every SLO; running the fastest plan: " + notes, generation, o.now);
  } else {
    SetCondition(
        conditions, "Feasible", true,
        plan.report.status == model::SolveStatus::kOptimal ? reason::kOptimal : reason::kFeasible,
        "", generation, o.now);
  }

  // The writes that bring the Deployments to the plan: only fields that differ.
  std::vector<DeploymentWrite> writes;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    const Placement& p = placements[i];
    auto it = o.deployments.find(p.deployment);
    if (it == o.deployments.end()) {
      writes.push_back(Create(pipeline, o, p, targets[i], plan.tasks[i].batch_size));
    } else if (auto patch = api::ManagedPatch(it->second, p.variant->batch_env, targets[i],
                                              plan.tasks[i].batch_size)) {
      writes.push_back({DeploymentWrite::Kind::kPatch, p.deployment, *patch});
    }
  }
  // The pipeline's other Deployments: combinations still in the spec idle at 0, the rest go.
  for (const auto& [name, deployment] : o.deployments) {
    if (now.replicas.contains(name)) continue;
    const json labels = deployment["metadata"].value("labels", json::object());
    const int ti = pipeline.TaskIndex(labels.value("pipescale.io/task", ""));
    const bool listed =
        ti >= 0 &&
        std::any_of(pipeline.spec.tasks[ti].variants.begin(),
                    pipeline.spec.tasks[ti].variants.end(), [&](const model::Variant& v) {
                      return v.name == labels.value("pipescale.io/variant", "") &&
                             v.FindProfile(labels.value("pipescale.io/hardware-class", ""));
                    });
    if (!listed && labels.value("pipescale.io/pipeline", "") == pipeline.name) {
      writes.push_back({DeploymentWrite::Kind::kDelete, name, {}});
    } else if (api::ReadManagedFields(deployment, "").replicas.value_or(0) != 0) {
      writes.push_back({DeploymentWrite::Kind::kScaleToZero, name, {{"spec", {{"replicas", 0}}}}});
    }
  }

  if (loki || !plan.pools.empty()) {
    const json data = api::RoutingConfigMapData(plan);
    if (!o.routing_config_map) {
      const api::Owner owner{.name = pipeline.name, .uid = o.object["metadata"].value("uid", "")};
      d.routing = ConfigMapWrite{true, api::RoutingConfigMapName(pipeline),
                                 api::BuildRoutingConfigMap(pipeline, owner, plan)};
    } else if (o.routing_config_map->value("data", json::object()) != data) {
      d.routing = ConfigMapWrite{false, api::RoutingConfigMapName(pipeline), {{"data", data}}};
    }
    if (!apply) d.routing.reset();
  }
  if (apply && waiting > 0) {
    d.writes = std::move(writes);
    SetCondition(conditions, "PlanApplied", false, reason::kScaleInFirst,
                 StrFormat("%d scale-outs wait for the scale-ins to finish: running both would "
                           "exceed the budget",
                           waiting),
                 generation, o.now);
  } else if (apply) {
    d.writes = std::move(writes);
    SetCondition(conditions, "PlanApplied", true, reason::kApplied,
                 "the Deployments match the plan", generation, o.now);
  } else {
    SetCondition(conditions, "PlanApplied", false, reason::kRecommendMode,
                 writes.empty() ? "the Deployments match the plan; nothing is written"
                                : StrFormat("%zu Deployment changes recommended; nothing is "
                                            "written in Recommend mode",
                                            writes.size()),
                 generation, o.now);
  }
  SetCondition(conditions, "Ready", true, reason::kReconciled, "", generation, o.now);

  const json plan_status = PlanStatus(plan, placements, targets);
  const json previous = d.status.value("plan", json::object());
  // An event (and a new solver record) only when some Deployment's replicas or batch size
  // change; predicted latencies move with every rate and are status, not news.
  if (const std::string diff = PlanDiff(previous, plan_status); !diff.empty()) {
    d.events.push_back(
        StrFormat("%s: %d replicas, $%.3f/h: ", algorithm_name, total_replicas, cost) + diff);
    d.status["solver"] = {{"name", algorithm_name},
                          {"status", model::SolveStatusName(plan.report.status)},
                          {"objective", plan.report.objective},
                          {"durationMs", 0}};  // the reconciler times the decision
  }
  d.status["plan"] = plan_status;
  d.status["totalReplicas"] = total_replicas;
  d.status["costPerHour"] = Round2(cost);
  json rates = json::object();
  for (const auto& [path, rate] : o.metrics->path_rates_rps) rates[path] = Round2(rate);
  d.status["observed"] = {{"pathRates", rates}};
  if (loki) {
    json demand = json::object();
    for (const auto& [path, rate] : d.demand.rps) demand[path] = Round2(rate);
    d.status["observed"]["demand"] = demand;
  }
  if (o.metrics->arrival_rate_rps) {
    d.status["observed"]["arrivalRate"] = Round2(*o.metrics->arrival_rate_rps);
  }
  d.plan = std::move(plan);
  return d;
}

}  // namespace pipescale::reconciler
