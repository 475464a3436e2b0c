#include "reconciler/batch_hold.h"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "api/deployment.h"
#include "api/deployment_view.h"
#include "optimizer/problem.h"

namespace pipescale::reconciler {

namespace {

// The problem's choice for a task at (hardware class, batch) with the most replicas up to
// `replicas` (the tail model offers several counts; more queue less), else with the fewest;
// nullptr when there is none.
const optimizer::Choice* ChoiceAt(const optimizer::Problem& problem, int dnn, int hw, int batch,
                                  int replicas) {
  const optimizer::Choice* most_within = nullptr;
  const optimizer::Choice* fewest = nullptr;
  for (const auto& c : problem.dnns[dnn].choices) {
    if (c.hardware_class != hw || c.batch != batch) continue;
    if (c.replicas <= replicas && (!most_within || c.replicas > most_within->replicas)) {
      most_within = &c;
    }
    if (!fewest || c.replicas < fewest->replicas) fewest = &c;
  }
  return most_within != nullptr ? most_within : fewest;
}

// The largest batch of `variant` from `batch` up whose run, twice, after `wait_ms` fits
// `budget_ms`. Once was tried: fa2-cpu kept 80% on its worst path through bursts where it had
// kept 91% (tests/data/trace-regression.csv), each request waiting out a grown batch ahead.
int MostRows(const model::Variant& variant, const model::Profile* profile, int batch,
             double wait_ms, double budget_ms) {
  if (profile == nullptr) return batch;
  // A table's last point, not a batch beyond it.
  const int largest = profile->latency.MaxBatch(variant.max_batch);
  int most = batch;
  while (most < largest && wait_ms + 2 * profile->latency.Ms(most + 1) <= budget_ms) ++most;
  return most;
}

bool SloMissed(const model::Pipeline& pipeline, const model::MetricsSnapshot& metrics) {
  return std::ranges::any_of(pipeline.spec.paths, [&](const model::Path& path) {
    auto it = metrics.path_latency_ms.find(path.name);
    return it != metrics.path_latency_ms.end() && it->second > path.slo_ms;
  });
}

// For each task of the plan, the running batch it may keep: the Deployment runs the batch the
// operator applied and the plan asks for another, at whatever replicas (a scale-out that keeps
// its batch restarts nothing; one that changed it restarted every pod at each step of fa2-cpu's
// ramps, 500-1,000 pod starts in 15 minutes, simulated). Where the router forms
// the batches, the running batch is the one the operator applied (no pod holds it), kept only
// while the plan meets the SLOs: changing it restarts nothing, and an overloaded plan's batch is
// its capacity. 0 where the plan's own batch stands. Read without the problem, so that a plan
// that changes no running batch (most intervals) compiles nothing.
std::vector<int> RunningBatches(const model::Pipeline& pipeline, const model::AppliedPlan* applied,
                                const Deployments& deployments, const model::Plan& plan) {
  std::vector<int> running(plan.tasks.size(), 0);
  if (applied == nullptr) return running;
  const bool feasible = plan.report.status != model::SolveStatus::kInfeasible;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    const model::TaskPlan& t = plan.tasks[i];
    const model::Task& task = pipeline.spec.tasks[pipeline.TaskIndex(t.task)];
    const model::Variant& variant = *task.FindVariant(t.variant);
    const std::string name = api::DeploymentName(pipeline, task, variant, t.hardware_class);
    auto it = deployments.find(name);
    const model::TaskPlan* was = applied->Find(name);
    if (it == deployments.end() || was == nullptr) continue;
    const api::ManagedFields f = api::ReadManagedFields(it->second, variant.batch_env);
    if (variant.RouterBatches() && !feasible) continue;
    const std::optional<int> batch =
        variant.RouterBatches() ? std::optional<int>(was->batch_size) : f.batch_size;
    if (batch && *batch != t.batch_size && batch == was->batch_size) {
      running[i] = *batch;
    }
  }
  return running;
}

// The running choice to keep for each task: its running batch needs no more replicas than the
// plan gives it. nullptr where the plan's own choice stands.
std::vector<const optimizer::Choice*> Keepable(const model::Pipeline& pipeline,
                                               const optimizer::Problem& problem,
                                               const std::vector<int>& running,
                                               const model::Plan& plan) {
  std::vector<const optimizer::Choice*> keep(plan.tasks.size(), nullptr);
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    if (running[i] == 0) continue;
    const model::TaskPlan& t = plan.tasks[i];
    const optimizer::Choice* c =
        ChoiceAt(problem, pipeline.TaskIndex(t.task), pipeline.HardwareClassIndex(t.hardware_class),
                 running[i], t.replicas);
    if (c != nullptr && c->replicas <= t.replicas) keep[i] = c;
  }
  return keep;
}

}  // namespace

void HoldAppliedBatches(const model::Pipeline& pipeline, const model::Workload& workload,
                        const model::MetricsSnapshot& metrics, const model::AppliedPlan* applied,
                        const Deployments& deployments, model::Plan& plan) {
  const std::vector<int> running = RunningBatches(pipeline, applied, deployments, plan);
  if (std::ranges::all_of(running, [](int b) { return b == 0; })) return;
  const optimizer::Problem problem = optimizer::Compile(pipeline, workload);
  std::vector<const optimizer::Choice*> keep = Keepable(pipeline, problem, running, plan);
  optimizer::Assignment assignment(problem.dnns.size());
  for (const model::TaskPlan& t : plan.tasks) {
    const int dnn = pipeline.TaskIndex(t.task);
    const optimizer::Choice* own = ChoiceAt(
        problem, dnn, pipeline.HardwareClassIndex(t.hardware_class), t.batch_size, t.replicas);
    if (own == nullptr) return;  // not a plan of this problem's choices: leave it alone
    assignment[dnn] = *own;
  }
  // A plan that meets no SLO anyway gains nothing from a restart at equal replicas; one that
  // does keeps each running batch that still lets every path meet its SLO, within the band
  // while the measured latencies meet them (all of them if they can, else one task at a time).
  const bool feasible = plan.report.status != model::SolveStatus::kInfeasible;
  const double band = SloMissed(pipeline, metrics) ? 0 : kKeepBand;
  optimizer::Assignment all = assignment;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    if (keep[i] != nullptr) all[pipeline.TaskIndex(plan.tasks[i].task)] = *keep[i];
  }
  if (!feasible || optimizer::MeetsSlos(problem, all, band)) {
    assignment = all;
  } else {
    for (size_t i = 0; i < plan.tasks.size(); ++i) {
      if (keep[i] == nullptr) continue;
      const int dnn = pipeline.TaskIndex(plan.tasks[i].task);
      const optimizer::Choice own = assignment[dnn];
      assignment[dnn] = *keep[i];
      if (!optimizer::MeetsSlos(problem, assignment, band)) {
        assignment[dnn] = own;
        keep[i] = nullptr;
      }
    }
  }
  for (model::TaskPlan& t : plan.tasks) {
    const optimizer::Choice& c = assignment[pipeline.TaskIndex(t.task)];
    t.batch_size = c.batch;
    t.latency_ms = c.exec_ms;
    t.queue_ms = c.queue_ms;
    t.batch_wait_ms = c.wait_ms;
  }
  for (size_t r = 0; r < problem.routes.size() && r < plan.paths.size(); ++r) {
    plan.paths[r].predicted_latency_ms =
        optimizer::RouteLatencyMs(problem, assignment, static_cast<int>(r));
  }
}

model::ServerQueue ServerQueueFor(const model::Variant& variant, const model::Profile* profile,
                                  const model::TaskPlan& task, const api::ManagedFields* running,
                                  double budget_ms) {
  if (variant.RouterBatches() || task.server_queue != model::ServerQueue{}) {
    return task.server_queue;
  }
  if (running != nullptr && running->batch_size == task.batch_size &&
      running->server_queue.max_delay_ms > 0) {
    return running->server_queue;
  }
  model::ServerQueue queue;
  // The whole wait the plan counted at the SLO's percentile (the fill's tail and the queue):
  // the mean fill alone sent half the batches out partial, below the throughput planned.
  const double counted = std::max(task.queue_ms, task.batch_wait_ms);
  if (task.batch_size > 1) queue.max_delay_ms = std::max(1.0, std::min(counted, budget_ms));
  // A batch that may grow waits at least 1 ms for company.
  const double wait = std::max(1.0, queue.max_delay_ms);
  const int most = MostRows(variant, profile, task.batch_size, wait, budget_ms);
  if (most > task.batch_size) {
    queue.max_batch = most;
    queue.max_delay_ms = wait;
  }
  return queue;
}

bool RollingOut(const api::DeploymentView& deployment) {
  const long generation = deployment.meta.generation;
  const long observed = deployment.observed_generation;
  const long updated = deployment.updated_replicas;
  const long running = deployment.status_replicas.value_or(0);
  // A new Deployment, or one only scaling up, restarts nothing: no pod of an older template.
  return running > updated || (observed < generation && running > 0);
}

std::vector<std::string> HoldBatchesDuringRollouts(const model::Pipeline& pipeline,
                                                   const Deployments& deployments,
                                                   const model::MetricsSnapshot& metrics,
                                                   const std::optional<ClusterCapacity>& capacity,
                                                   std::vector<PlannedDeployment>& planned) {
  std::vector<std::string> held;
  const bool missed = SloMissed(pipeline, metrics);
  const bool rolling = std::any_of(deployments.begin(), deployments.end(),
                                   [](const auto& d) { return RollingOut(d.second); });
  // The room each class keeps once this plan's scale-outs are placed.
  std::map<std::string, int> room;
  if (capacity) {
    for (const ClassCapacity& c : capacity->classes) room[c.hardware_class] = c.placeable;
    for (const PlannedDeployment& p : planned) {
      room[p.hardware_class->name] -= std::max(0, p.target - p.current.value_or(0));
    }
  }
  for (PlannedDeployment& p : planned) {
    auto it = deployments.find(p.name);
    if (it == deployments.end()) continue;
    const api::ManagedFields now = api::ReadManagedFields(it->second, p.variant->batch_env);
    const std::optional<int> batch = now.batch_size;
    if (!batch || *batch == p.batch_size) continue;
    // A batch the spec no longer allows (batchSize.max lowered, or the Deployment edited) is
    // not the plan's to keep: no decision runs a batch outside [1, batchSize.max].
    if (*batch < 1 || *batch > p.variant->max_batch) continue;
    // A rollout starts maxSurge (25%, at least one) new pods first; without room for them it
    // would leave them Pending beside the old ones, whatever the SLO says.
    const int surge = (std::max(p.target, 1) + 3) / 4;
    auto left = room.find(p.hardware_class->name);
    const bool no_room = left != room.end() && left->second < surge;
    // While the scale-down window keeps more replicas than the plan needs, the running batch
    // serves; the new one comes with the scale-in instead of a restart now and another then.
    const bool window = p.current && p.target == *p.current && p.target > p.planned;
    // Its own rollout under way: a change now restarts the pods that just started, before the
    // batch they start with has served, and the next plan, on what they measured, flips it back.
    const bool own = RollingOut(it->second);
    // None of its pods Ready yet (woken from zero, or scaled out from it): a change replaces
    // pods before they answer, and the requests held for them wait a whole start-up more.
    const bool unstarted = it->second.replicas.value_or(0) > 0 && it->second.ready_replicas == 0;
    if (((rolling || window) && !missed) || no_room || own || unstarted) {
      p.batch_size = *batch;
      p.server_queue = now.server_queue;  // the wait goes with its batch (ServerQueueFor)
      held.push_back(p.name + (no_room          ? " (no room for its surge pods)"
                               : own || rolling ? " (until the rollout under way ends)"
                               : unstarted      ? " (until its first pod is Ready)"
                                                : " (until the scale-in the window holds back)"));
    } else if (left != room.end()) {
      left->second -= surge;  // the next rollout on the class finds less
    }
  }
  return held;
}

}  // namespace pipescale::reconciler
