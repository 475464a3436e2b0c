#include "reconciler/reconciler.h"

#include <chrono>
#include <cmath>

#include "api/deployment_view.h"
#include "api/status_json.h"
#include "common/log.h"
#include "kube/merge_patch.h"
#include "optimizer/registry.h"
#include "reconciler/conditions.h"
#include "reconciler/worth_writing.h"

namespace pipescale::reconciler {

using nlohmann::json;

Reconciler::Reconciler(const kube::Client& client, const PipelineInformer& pipelines,
                       const DeploymentInformer& deployments, const OwnedObjects& owned,
                       MetricsReader metrics, Clock clock, HistoryReader history)
    : client_(client),
      pipelines_(pipelines),
      deployments_(deployments),
      owned_(owned),
      metrics_(std::move(metrics)),
      clock_(std::move(clock)),
      history_(std::move(history)) {}

Result<Reconciler::Outcome> Reconciler::Reconcile(const std::string& key) {
  Object cached = pipelines_.Get(key);
  std::string cached_version = cached ? cached->meta.resource_version : "";
  Object object = Latest(key, std::move(cached));
  Outcome outcome;
  if (!object) {
    // Deleted: its Deployments go with it through their owner references.
    owned_.ForgetAdopter(key);
    if (arbiter_ != nullptr) arbiter_->Forget(key);
    std::lock_guard lock(mu_);
    memory_.erase(key);
    return outcome;
  }
  auto seen = Observe(key, std::move(object), std::move(cached_version));
  if (!seen) return seen.error();
  Decision decision = TimedDecide(key, *seen, outcome);
  const Observed& o = seen->observed;
  if (arbiter_ != nullptr && o.capacity && decision.plan && seen->object->parsed.pipeline) {
    arbiter_->Record(*seen->object->parsed.pipeline, *o.capacity, decision.needs, o.now);
  }
  if (Status acted = Act(*seen, decision, outcome); !acted) return acted.error();
  if (Status reported = Report(key, *seen, std::move(decision), outcome); !reported) {
    return reported.error();
  }
  return outcome;
}

// ---------------------------------------------------------------------------------------------
// Observe: the object (decoded by the informer), its Deployments, the metrics, the router's
// objects and what the cluster can place, all typed: Decide reads no JSON.

Result<Reconciler::Observation> Reconciler::Observe(const std::string& key, Object object,
                                                    std::string cached_version) {
  Observation seen{
      .observed = {}, .object = std::move(object), .cached_version = std::move(cached_version)};
  const api::PipelineObject& read = *seen.object;
  Observed& o = seen.observed;
  o.meta = read.meta;
  o.status = read.status;
  o.router_pipeline = read.for_router;
  o.now = clock_();
  o.deployments = ObserveDeployments(seen);
  const std::optional<model::Pipeline>& pipeline = read.parsed.pipeline;
  if (pipeline) {
    o.metrics = metrics_(*pipeline);
    o.routing_config_map = ObserveRoutingConfigMap(*pipeline);
    if (pipeline->spec.router) o.router = owned_.Router(*pipeline);
    o.router_cluster_role = router_cluster_role_;
    o.milp_solver = milp_solver_;
  }
  o.memory = Remembered(key, o.status, read.parsed, o.now);
  if (pipeline) o.capacity = ObserveCapacity(*pipeline);
  return seen;
}

Deployments Reconciler::ObserveDeployments(const Observation& seen) const {
  const api::ObjectMeta& pipeline = seen.object->meta;
  const std::optional<model::Pipeline>& parsed = seen.object->parsed.pipeline;
  const std::string key = pipeline.namespace_name + "/" + pipeline.name;
  Deployments out;
  for (const auto& d : deployments_.ByIndex(kPipelineIndex, key)) out.emplace(d->meta.name, *d);
  // Adopted Deployments carry none of our labels: read them by name, from their own watch once
  // it has listed. (An invalid spec is decided without its Deployments.)
  if (!parsed) return out;
  for (const model::Task& task : parsed->spec.tasks) {
    for (const model::Variant& variant : task.variants) {
      const std::string& adopted = variant.deployment_name;
      if (adopted.empty() || out.contains(adopted)) continue;
      OwnedObjects::Adopted cached =
          owned_.AdoptedDeployment(key, pipeline.namespace_name, adopted);
      if (cached.known) {
        if (cached.deployment) out.emplace(adopted, *cached.deployment);
        continue;
      }
      auto d = client_.Get(kube::ObjectPath(kube::kDeployments, pipeline.namespace_name, adopted));
      if (d) out.emplace(adopted, api::ReadDeployment(*d));
    }
  }
  return out;
}

// The routing ConfigMap, for an optimizer that hands the data plane anything; nullopt when it
// is absent.
std::optional<api::ConfigMapView> Reconciler::ObserveRoutingConfigMap(
    const model::Pipeline& pipeline) const {
  if (!pipeline.spec.router &&
      optimizer::OptimizerOf(pipeline.spec).data_plane == optimizer::DataPlane::kNone) {
    return std::nullopt;
  }
  const auto cached = owned_.RoutingConfigMap(pipeline);
  if (cached == nullptr) return std::nullopt;
  return *cached;
}

std::optional<ClusterCapacity> Reconciler::ObserveCapacity(const model::Pipeline& pipeline) const {
  // No nodes in view (not synced, or no rights to list them) is no news about capacity.
  if (cluster_ == nullptr || !cluster_->HasNodes()) return std::nullopt;
  ClusterCapacity capacity = cluster_->Capacity(pipeline);
  if (arbiter_ != nullptr) arbiter_->Allot(pipeline, capacity, clock_());
  return capacity;
}

// What the last decision for `key` remembered; on first sight (a new leader, a restart) what the
// status and Prometheus give back. Until the rates could be read, every reconcile asks again.
Memory Reconciler::Remembered(const std::string& key, const model::PipelineStatus& status,
                              const api::ParsedPipeline& parsed, double now) {
  {
    std::lock_guard lock(mu_);
    if (auto it = memory_.find(key); it != memory_.end()) return it->second;
  }
  if (!parsed.pipeline) return {};
  const optimizer::Descriptor& optimizer = optimizer::OptimizerOf(parsed.pipeline->spec);
  const int intervals = RebuildIntervals(optimizer);
  std::optional<model::RateHistory> rates;
  if (intervals > 0 && history_) {
    if (auto read = history_(*parsed.pipeline, intervals, now)) rates = std::move(*read);
  }
  Memory memory = Recall(status, rates ? &*rates : nullptr, optimizer);
  if (rates || intervals == 0 || !history_) {
    std::lock_guard lock(mu_);
    memory_[key] = memory;
  }
  return memory;
}

// ---------------------------------------------------------------------------------------------
// Decide, timed: a new solver record carries how long the decision took.

Decision Reconciler::TimedDecide(const std::string& key, Observation& seen, Outcome& outcome) {
  const auto start = std::chrono::steady_clock::now();
  Decision decision = Decide(seen.observed, seen.object->parsed);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  outcome.decide_seconds = ms / 1000;
  {
    std::lock_guard lock(mu_);
    // Kept only once recalled in full (Remembered); until then each reconcile recalls again.
    if (memory_.contains(key)) memory_[key] = decision.memory;
  }
  // The record is this decision's when it announces a plan change (Decide leaves the time 0).
  if (decision.status.solver && decision.status.solver->duration_ms == 0 &&
      !decision.events.empty()) {
    decision.status.solver->duration_ms = std::round(ms * 1000) / 1000;
  }
  return decision;
}

// ---------------------------------------------------------------------------------------------
// Act: the Deployments, the routing ConfigMap and the router's objects, in that order.

Status Reconciler::Act(const Observation& seen, const Decision& decision, Outcome& outcome) const {
  const std::string& ns = seen.observed.meta.namespace_name;
  for (const DeploymentWrite& write : decision.writes) {
    if (Status s = Write(ns, write, outcome); !s) return s.error();
  }
  for (const std::optional<ConfigMapWrite>* routing :
       {&decision.routing, &decision.router_pipeline}) {
    if (!*routing) continue;
    if (Status s = Write(ns, **routing); !s) return s.error();
    outcome.routing_written = true;
  }
  for (const ObjectWrite& write : decision.router) {
    if (Status s = Write(ns, write); !s) return s.error();
    ++outcome.router_writes;
  }
  return Done{};
}

Status Reconciler::Write(const std::string& ns, const DeploymentWrite& write,
                         Outcome& outcome) const {
  const std::string path = kube::ObjectPath(kube::kDeployments, ns, write.name);
  ++outcome.deployment_writes;
  switch (write.kind) {
    case DeploymentWrite::Kind::kCreate: {
      auto created = client_.Create(kube::CollectionPath(kube::kDeployments, ns), write.body);
      if (created.ok()) return Done{};
      if (created.error().kind != ErrorKind::kConflict) return created.error();
      // It exists after all (our cache was behind): re-read and set what we manage.
      auto existing = client_.Get(path);
      if (!existing) return existing.error();
      auto patch = api::ManagedPatch(api::ReadDeployment(*existing), write.batch_env,
                                     write.replicas, write.batch_size, write.server_queue);
      if (!patch) return Done{};
      auto patched = client_.StrategicMergePatch(path, *patch);
      if (!patched) return patched.error();
      return Done{};
    }
    case DeploymentWrite::Kind::kPatch:
    case DeploymentWrite::Kind::kScaleToZero: {
      auto patched = client_.StrategicMergePatch(path, write.body);
      if (!patched) return patched.error();
      // A change to the pod template (the batch size) restarts every pod of the Deployment.
      if (write.body.value("spec", json::object()).contains("template")) ++outcome.rollouts;
      return Done{};
    }
    case DeploymentWrite::Kind::kDelete: {
      Status deleted = client_.Delete(path);
      if (!deleted.ok() && deleted.error().kind != ErrorKind::kNotFound) return deleted.error();
      return Done{};
    }
  }
  return Done{};
}

Status Reconciler::Write(const std::string& ns, const ConfigMapWrite& write) const {
  const std::string path = kube::ObjectPath(kube::kConfigMaps, ns, write.name);
  if (write.create) {
    auto created = client_.Create(kube::CollectionPath(kube::kConfigMaps, ns), write.body);
    if (created.ok()) return Done{};
    if (created.error().kind != ErrorKind::kConflict) return created.error();
    // Someone created it since we looked: bring its data and our labels (which our watch
    // selects it by) to ours.
    auto patched =
        client_.MergePatch(path, {{"metadata", {{"labels", write.body["metadata"]["labels"]}}},
                                  {"data", write.body["data"]}});
    if (!patched) return patched.error();
    return Done{};
  }
  auto patched = client_.MergePatch(path, write.body);
  if (!patched) return patched.error();
  return Done{};
}

Status Reconciler::Write(const std::string& ns, const ObjectWrite& write) const {
  if (!write.create) {
    auto patched = client_.MergePatch(kube::ObjectPath(write.type, ns, write.name), write.body);
    if (!patched) return patched.error();
    return Done{};
  }
  auto created = client_.Create(kube::CollectionPath(write.type, ns), write.body);
  // Created since it was read: the next reconcile compares it.
  if (!created && created.error().kind != ErrorKind::kConflict) return created.error();
  return Done{};
}

// ---------------------------------------------------------------------------------------------
// Report: the status (written once, and only when it changed), the events, and the outcome.

Status Reconciler::Report(const std::string& key, Observation& seen, Decision decision,
                          Outcome& outcome) {
  if (Status s = WriteStatus(key, seen, decision, outcome); !s) return s.error();
  EmitEvents(seen, decision, outcome);
  const model::PipelineStatus& status = decision.status;
  outcome.requeue_after_seconds = decision.requeue_after_seconds;
  outcome.surges = decision.surges;
  outcome.headroom = decision.headroom;
  outcome.conditions = status.conditions;
  outcome.cost_per_hour = status.cost_per_hour.value_or(0);
  if (decision.plan && status.plan) outcome.deployments = status.plan->deployments;
  if (status.observed && status.observed->data_plane) {
    outcome.served_accuracy = status.observed->data_plane->served_accuracy;
  }
  if (status.observed) outcome.profiles = status.observed->profiles;
  outcome.plan = std::move(decision.plan);
  outcome.capacity = std::move(seen.observed.capacity);
  return Done{};
}

Status Reconciler::WriteStatus(const std::string& key, const Observation& seen,
                               const Decision& decision, Outcome& outcome) {
  const api::PipelineObject& read = *seen.object;
  const json previous = read.StoredStatus();
  const json status = api::StatusToJson(decision.status);
  if (!WorthWriting(previous, status)) return Done{};
  // Keys the decision left out are removed, not kept by the merge.
  auto written = client_.MergePatch(
      kube::ObjectPath(kInferencePipelines, read.meta.namespace_name, read.meta.name, "status"),
      {{"status", kube::MergePatchFrom(previous, status)}});
  if (!written) return written.error();
  RememberWritten(key, read, seen.cached_version,
                  std::make_shared<const api::PipelineObject>(api::ReadPipelineObject(*written)));
  outcome.status_written = true;
  const model::PipelineStatus& before = read.status;
  const bool newly_invalid =
      !read.parsed.pipeline && (ConditionStatus(before.conditions, "Ready") != "False" ||
                                before.observed_generation != decision.status.observed_generation);
  if (newly_invalid) {
    const auto& errors = read.parsed.errors;
    Emit(read.meta,
         {.type = "Warning",
          .reason = reason::kInvalidSpec,
          .message = errors.empty() ? "invalid spec" : errors.front().ToString(),
          .now = seen.observed.now},
         outcome);
  }
  return Done{};
}

void Reconciler::EmitEvents(const Observation& seen, const Decision& decision,
                            Outcome& outcome) const {
  const api::ObjectMeta& meta = seen.object->meta;
  const double now = seen.observed.now;
  for (const std::string& message : decision.events) {
    Emit(meta, {.type = "Normal", .reason = "PlanChanged", .message = message, .now = now},
         outcome);
  }
  for (const Event& warning : decision.warnings) {
    Emit(meta,
         {.type = "Warning", .reason = warning.reason, .message = warning.message, .now = now},
         outcome);
  }
  for (const Event& notice : decision.notices) {
    Emit(meta, {.type = "Normal", .reason = notice.reason, .message = notice.message, .now = now},
         outcome);
  }
  for (const Revert& revert : decision.reverts) {
    Emit(meta,
         {.type = "Warning",
          .reason = reason::kChangeReverted,
          .message = revert.Message(),
          .now = now},
         outcome);
    outcome.reverted_fields.push_back(revert.field);
  }
}

void Reconciler::Emit(const api::ObjectMeta& meta, const api::EventRecord& event,
                      Outcome& outcome) const {
  const std::string& ns = meta.namespace_name;
  // An event that cannot be written is not worth failing the reconcile for, but is worth a line.
  auto created =
      client_.Create(kube::CollectionPath(kube::kEvents, ns), api::BuildEvent(meta, event));
  if (created.ok()) {
    ++outcome.events;
  } else {
    Log("warning", "cannot record an event",
        {{"pipeline", ns + "/" + meta.name},
         {"reason", event.reason},
         {"error", created.error().message}});
  }
}

// ---------------------------------------------------------------------------------------------
// What this replica wrote, against an informer that lags it.

Reconciler::Object Reconciler::Latest(const std::string& key, Object cached) {
  std::lock_guard lock(mu_);
  auto it = written_.find(key);
  if (it == written_.end()) return cached;
  if (cached && it->second.superseded.contains(cached->meta.resource_version)) {
    return it->second.object;
  }
  written_.erase(it);  // caught up, deleted, or written by someone else since: the cache rules
  return cached;
}

bool Reconciler::EchoOfOwnWrite(const std::string& key, const api::PipelineObject& object) {
  std::lock_guard lock(mu_);
  const auto it = written_.find(key);
  if (it == written_.end()) return false;
  const std::string& written = it->second.object->meta.resource_version;
  if (written.empty() || written != object.meta.resource_version) return false;
  written_.erase(it);
  return true;
}

void Reconciler::RememberWritten(const std::string& key, const api::PipelineObject& decided_from,
                                 const std::string& cached_version, Object written) {
  std::lock_guard lock(mu_);
  Written& w = written_[key];
  w.superseded.insert(cached_version);
  w.superseded.insert(decided_from.meta.resource_version);
  w.object = std::move(written);
}

}  // namespace pipescale::reconciler
