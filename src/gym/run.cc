// The loop: events in time order; every second the bookkeeping; at the policy's period the
// operator's Decide (the same function the reconciler calls, on the snapshot the run's metrics
// give) or a baseline autoscaler per task. The trace starts once every task has a Ready pod,
// as pipescale-loadgen --wait-ready holds it on the cluster in a box.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "api/config_map.h"
#include "api/deployment_view.h"
#include "api/pipeline_object.h"
#include "api/pipeline_parse.h"
#include "api/quantity.h"
#include "controller/controller.h"
#include "gym/world.h"
#include "optimizer/registry.h"
#include "reconciler/idle.h"
#include "reconciler/surge.h"

namespace pipescale::gym::engine {
namespace {

// The world's stream of chance, apart from the clients' (trace::ArrivalStream draws theirs from
// the seed itself): a run's requests are the same whatever its world draws.
std::mt19937_64 WorldRng(const Options& o) {
  const std::uint64_t seed = o.world_seed.value_or(o.seed);
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                    0x5eedU};
  return std::mt19937_64(seq);
}

constexpr double kEpoch = 1.8e9;  // the unix time the run starts at
// hack/run.sh waits up to 180 s for the planned pods, then the load generator up to 120 s for a
// Ready pod per task.
constexpr double kWaitReadyMs = 300000;
constexpr double kWatchLatencyMs = 200;  // from a Deployment's change to its reconcile
constexpr double kDoorReadMs = 20;       // the door watch's read of the routers, to the reconcile
constexpr std::int64_t kPeriodic = 0, kWatched = 1;  // why a kControl event runs

std::map<std::string, double> Allocatable(const nlohmann::json& node) {
  std::map<std::string, double> out;
  const nlohmann::json& a = node["status"]["allocatable"];
  for (const auto& [k, v] : a.items()) {
    if (!v.is_string()) continue;
    if (auto q = api::ParseQuantity(v.get<std::string>())) out[k] = *q;
  }
  return out;
}

}  // namespace

World::World(model::Pipeline p, nlohmann::json o, const Options& opts)
    : pipeline(std::move(p)),
      object(std::move(o)),
      options(opts),
      rng(WorldRng(opts)),
      nodes(opts.nodes) {
  graph = std::make_unique<routing::Graph>(pipeline);
  for (const nlohmann::json& n : nodes) node_free.push_back(Allocatable(n));
  if (pipeline.spec.router) {
    policy.drop = model::ParseDropPolicy(pipeline.spec.router->drop_policy)
                      .value_or(model::DropPolicy::kReroute);
  }
  ResetWalker();
  ready.assign(pipeline.spec.tasks.size(), {});
  current = SecondCounts(pipeline.spec.paths.size());
  last_minute = SecondCounts(pipeline.spec.paths.size());
  path_outcomes.resize(pipeline.spec.paths.size() + 1);
  for (size_t i = 0; i < pipeline.spec.paths.size(); ++i) {
    path_outcomes[i + 1].slo_ms = pipeline.spec.paths[i].slo_ms;
  }
  interval_paths.resize(pipeline.spec.paths.size() + 1);
  all_ok_ms.resize(pipeline.spec.paths.size() + 1);
  cold_ok_ms.resize(pipeline.spec.paths.size() + 1);
  // The clients' requests as pipescale-loadgen draws them for the seed; their own stream, so
  // every policy of a run meets the same requests whatever the world draws.
  arrivals.emplace(options.trace, trace::ClientMix(pipeline), options.seed);
  const nlohmann::json& meta = object.contains("metadata") ? object["metadata"] : nlohmann::json();
  pipeline_key = meta.value("namespace", "default") + "/" + meta.value("name", "");
  // Its own stream, apart from the clients' and the world's: neither moves with the clock.
  std::mt19937_64 clock_rng(opts.seed ^ 0x9e3779b97f4a7c15ULL);
  steady_clock_at_start_ms = std::uniform_real_distribution<double>(0, 86400e3)(clock_rng);
}

void World::At(double at_ms, EventKind kind, std::int64_t a, std::int64_t b) {
  events.push(Event{.at_ms = at_ms, .seq = seq++, .kind = kind, .a = a, .b = b});
}

void World::ScheduleArrival() {
  if (const auto a = arrivals->Next()) {
    At(trace_start_ms + 1000 * a->at_s, EventKind::kArrival, a->path, a->rows);
  }
}

void World::OperatorStep() {
  reconciler::Observed& o = observed;
  if (o.meta.name.empty()) {
    const api::PipelineObject read = api::ReadPipelineObject(object);
    o.meta = read.meta;
    o.router_pipeline = read.for_router;
  }
  UpdateDeploymentObjects(deployment_objects);
  o.deployments.clear();
  for (const auto& [name, d] : deployment_objects)
    o.deployments.emplace(name, api::ReadDeployment(d));
  o.metrics = Snapshot();
  o.now = kEpoch + now_ms_ / 1000;
  o.routing_config_map.reset();
  if (routing_config_map) o.routing_config_map = api::ReadConfigMap(*routing_config_map);
  // Every pipeline's pods take room on the nodes the pipelines share.
  const std::uint64_t changed = tenancy != nullptr ? tenancy->PodsChanged() : pods_changed;
  if (!nodes.empty() && pods_counted != changed) {
    counted = reconciler::ComputeCapacity(
        pipeline, nodes, tenancy != nullptr ? tenancy->PodObjects() : PodObjects());
    pods_counted = changed;
  }
  o.capacity = counted;
  reconciler::Arbiter* arbiter = tenancy != nullptr ? tenancy->arbiter.get() : nullptr;
  if (arbiter != nullptr && o.capacity) arbiter->Allot(pipeline, *o.capacity, o.now);
  const auto router_deployment = router_objects.find("deployments");
  o.router = {.service_account = router_objects.contains("serviceaccounts"),
              .role_binding = router_objects.contains("rolebindings"),
              .service = router_objects.contains("services"),
              .deployment = router_deployment == router_objects.end()
                                ? std::nullopt
                                : std::optional(api::ReadDeployment(router_deployment->second))};
  reconciler::Decision decision = reconciler::Decide(o, *parsed);
  if (arbiter != nullptr && o.capacity && decision.plan) {
    arbiter->Record(pipeline, *o.capacity, decision.needs, o.now);
  }
  o.status = std::move(decision.status);
  o.memory = std::move(decision.memory);
  ApplyDecision(decision);
  // The controller's work queue: a key waiting to be requeued keeps its earliest time
  // (controller/work_queue.cc), so the periodic schedule stays anchored while events add
  // reconciles between.
  const double next_s = decision.requeue_after_seconds.value_or(pipeline.spec.interval_seconds);
  const std::chrono::milliseconds after(std::lround(1000 * std::max(1.0, next_s)));
  const std::chrono::milliseconds steady(std::llround(steady_clock_at_start_ms + now_ms_));
  const double next_ms =
      now_ms_ + static_cast<double>(controller::Spread(pipeline_key, after, steady).count());
  if (periodic_at_ms < now_ms_ || next_ms < periodic_at_ms) {
    periodic_at_ms = next_ms;
    At(next_ms, EventKind::kControl, kPeriodic);
  }
}

void World::PodChanged() {
  // The operator watches the pipeline's pods (operator/main.cc): each change of one, created,
  // bound to a node, Ready, deleted or gone, queues the pipeline at once (the informer's latency,
  // a fraction of a second). So a scale-out is re-planned within seconds on the rate then read.
  // The room it takes or frees is the room pipelines sharing its nodes divide.
  if (tenancy != nullptr && tenancy->arbiter) {
    tenancy->arbiter->PodChanged(reconciler::PipelineKey(pipeline));
  }
  Nudge();
}

void World::Nudge() {
  if (optimizer == nullptr || event_at_ms >= now_ms_) return;
  event_at_ms = now_ms_ + kWatchLatencyMs;
  At(event_at_ms, EventKind::kControl, kWatched);
}

// The operator's surge watch (operator/quick_look.h): every kSurgeLookSeconds it reads the
// routers' recent rates and queues a pipeline whose rates surge past its status's at once.
void World::WatchSurges() {
  if (optimizer == nullptr || !reconciler::SurgeWatched(pipeline, observed.status)) return;
  if (seconds.size() % static_cast<size_t>(reconciler::kSurgeLookSeconds) != 0) return;
  if (reconciler::Surging(pipeline, observed.status, RecentRates())) {
    PodChanged();  // the same queue, after the same latency
  }
}

// The operator's door watch (operator/quick_look.h): every kDoorLookSeconds it reads the routers'
// doors and queues a pipeline at once whose held requests wake a sleeping path.
void World::WatchDoor(int path) {
  if (optimizer == nullptr || event_at_ms >= now_ms_) return;
  if (!reconciler::WakesNow(pipeline, observed.status, {{graph->PathName(path), 1}})) return;
  const double every_ms = 1000 * reconciler::kDoorLookSeconds;
  event_at_ms = std::ceil(now_ms_ / every_ms) * every_ms + kDoorReadMs;
  At(event_at_ms, EventKind::kControl, kWatched);
}

void World::AutoscalerStep() {
  for (size_t t = 0; t < pipeline.spec.tasks.size(); ++t) {
    const int d = baseline_deployment[t];
    const int want =
        autoscaler->Desired(now_ms_ / 1000, pipeline.spec.tasks[t].name, deployments[d].replicas);
    SetReplicas(d, want);
  }
  Reconcile();
  RebuildRouting();
  periodic_at_ms = now_ms_ + 1000 * autoscaler->PeriodSeconds();
  At(periodic_at_ms, EventKind::kControl, kPeriodic);
}

void World::Control() {
  if (optimizer != nullptr) {
    OperatorStep();
  } else if (autoscaler) {
    AutoscalerStep();
  }
}

// As pipescale-loadgen --wait-ready holds the trace: until the router says the pipeline's model
// is ready, every task with a Ready pod. (hack/run.sh waits for the planned pods first, but not
// for those the scheduler cannot place, which early plans may ask for.)
bool World::ReadyToStart() const {
  return std::all_of(ready.begin(), ready.end(), [](const auto& r) { return !r.empty(); });
}

void World::OnSecond() {
  EndSecond();
  PlacePending();
  WatchSurges();
  // Pipelines that share the nodes start their traces together, whose peaks then overlap.
  const bool all_ready = tenancy != nullptr ? tenancy->AllReady() : ReadyToStart();
  if (trace_start_ms < 0 && (all_ready || now_ms_ >= kWaitReadyMs)) StartTrace();
  if (trace_start_ms >= 0 && now_ms_ - last_row_ms >= 1000 * options.interval_row_s - 1e-6) {
    RecordInterval();
  }
  At(now_ms_ + 1000, EventKind::kSecond);
}

void World::StartTrace() {
  trace_start_ms = now_ms_;
  last_row_ms = now_ms_;
  end_ms_ = now_ms_ + 1000 * options.RunSeconds();
  // What ran before the first request is the set-up, not the run.
  report = PolicyReport();
  report.policy = options.policy;
  for (PathOutcome& p : path_outcomes) p = PathOutcome{.slo_ms = p.slo_ms};
  replica_seconds_ready = 0;
  ScheduleArrival();
}

void World::Dispatch(const Event& e) {
  switch (e.kind) {
    case EventKind::kArrival:
      ++arrivals_in_row;
      OnArrival(static_cast<int>(e.a), static_cast<int>(e.b));
      ScheduleArrival();
      break;
    case EventKind::kDoorPoll:
      if (walks.Find(e.a) != nullptr) OnDoorPoll(e.a);
      break;
    case EventKind::kPodWake:
      if (pods[e.a].wake_at_ms == e.at_ms) pods[e.a].wake_at_ms = -1;
      MaybeStart(static_cast<int>(e.a));
      break;
    case EventKind::kBatchDone:
      OnBatchDone(static_cast<int>(e.a));
      break;
    case EventKind::kBatcherDue:
      if (batchers[e.a].due_ms == e.at_ms) batchers[e.a].due_ms = -1;
      OnBatcherDue(static_cast<int>(e.a));
      break;
    case EventKind::kPodReady:
      OnPodReady(static_cast<int>(e.a));
      break;
    case EventKind::kPodGone:
      OnPodGone(static_cast<int>(e.a));
      break;
    case EventKind::kControl:
      // Only the latest of each kind: an earlier periodic time replaced it, or it already ran.
      if (e.a == kPeriodic && e.at_ms != periodic_at_ms) break;
      if (e.a == kWatched && e.at_ms != event_at_ms) break;
      if (e.a == kPeriodic) periodic_at_ms = -1;
      Control();
      break;
    case EventKind::kSecond:
      OnSecond();
      break;
    case EventKind::kPoolExpire:
      OnPoolExpire(e.a);
      break;
    case EventKind::kCallDelivered:
      OnCallDelivered(e.a);
      break;
    case EventKind::kCallArrives:
      OnCallArrives(e.a);
      break;
  }
}

void World::Begin() {
  periodic_at_ms = 0;
  At(0, EventKind::kControl, kPeriodic);
  At(1000, EventKind::kSecond);
}

double World::NextAt() const {
  constexpr double kDone = std::numeric_limits<double>::infinity();
  if (events.empty()) return kDone;
  const double at = events.top().at_ms;
  if (trace_start_ms >= 0 && at > end_ms_) return kDone;
  if (trace_start_ms < 0 && at > 2 * kWaitReadyMs) return kDone;  // never ready: nothing to run
  return at;
}

void World::HandleNext() {
  const Event e = events.top();
  events.pop();
  now_ms_ = e.at_ms;
  Dispatch(e);
  if (options.progress && ++handled_ % 200000 == 0 && trace_start_ms >= 0) {
    options.progress((now_ms_ - trace_start_ms) / std::max(1.0, end_ms_ - trace_start_ms));
  }
}

PolicyReport World::End() {
  now_ms_ = std::max(now_ms_, end_ms_);
  if (trace_start_ms >= 0 && now_ms_ > last_row_ms) RecordInterval();
  return Finish();
}

PolicyReport World::Run() {
  const auto wall = std::chrono::steady_clock::now();
  Begin();
  while (NextAt() < std::numeric_limits<double>::infinity()) HandleNext();
  PolicyReport out = End();
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  return out;
}

}  // namespace pipescale::gym::engine
