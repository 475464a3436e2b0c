#include "reconciler/reconciler.h"

#include <chrono>
#include <cmath>

#include "api/deployment.h"
#include "api/pipeline_parse.h"
#include "api/router_objects.h"
#include "common/json_fields.h"
#include "common/log.h"
#include "common/time.h"
#include "kube/merge_patch.h"
#include "optimizer/registry.h"
#include "reconciler/conditions.h"

namespace pipescale::reconciler {

using nlohmann::json;

Reconciler::Reconciler(const kube::Client& client, const kube::Informer& pipelines,
                       const kube::Informer& deployments, MetricsReader metrics, Clock clock,
                       HistoryReader history)
    : client_(client),
      pipelines_(pipelines),
      deployments_(deployments),
      metrics_(std::move(metrics)),
      clock_(std::move(clock)),
      history_(std::move(history)) {}

// What the last decision for `key` remembered; on first sight (a new leader, a restart) what the
// status and Prometheus give back. Until the rates could be read, every reconcile asks again.
Memory Reconciler::Remembered(const std::string& key, const json& object,
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
  Memory memory =
      Recall(object.value("status", json::object()), rates ? &*rates : nullptr, optimizer);
  if (rates || intervals == 0 || !history_) {
    std::lock_guard lock(mu_);
    memory_[key] = memory;
  }
  return memory;
}

std::map<std::string, json> Reconciler::ObserveDeployments(const json& object) const {
  const std::string name = object["metadata"]["name"];
  const std::string ns = object["metadata"]["namespace"];
  std::map<std::string, json> out;
  for (json& d : deployments_.List()) {
    const json& meta = d["metadata"];
    if (meta.value("namespace", "") == ns &&
        meta.value("labels", json::object()).value(kDeploymentSelector, "") == name) {
      out[meta["name"]] = std::move(d);
    }
  }
  // Adopted Deployments carry none of our labels: read them by name.
  for (const auto& task : object["spec"].value("tasks", json::array())) {
    for (const auto& variant : task.value("variants", json::array())) {
      const std::string adopted = variant.value("deploymentName", "");
      if (adopted.empty() || out.contains(adopted)) continue;
      if (auto d = client_.Get(kube::ObjectPath(kube::kDeployments, ns, adopted))) {
        out[adopted] = std::move(*d);
      }
    }
  }
  return out;
}

Status Reconciler::Act(const std::string& ns, const DeploymentWrite& write,
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
      auto patch = api::ManagedPatch(*existing, write.batch_env, write.replicas, write.batch_size);
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

void Reconciler::Emit(const json& object, const std::string& type, const std::string& reason,
                      const std::string& message, double now, Outcome& outcome) const {
  const json& meta = object["metadata"];
  const std::string ns = meta["namespace"];
  const json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"generateName", meta["name"].get<std::string>() + "."}, {"namespace", ns}}},
      {"involvedObject",
       {{"apiVersion", "pipescale.io/v1alpha1"},
        {"kind", "InferencePipeline"},
        {"name", meta["name"]},
        {"namespace", ns},
        {"uid", meta.value("uid", "")}}},
      {"type", type},
      {"reason", reason},
      {"message", message.substr(0, 1024)},
      {"source", {{"component", "pipescale-operator"}}},
      {"firstTimestamp", FormatRfc3339(now)},
      {"lastTimestamp", FormatRfc3339(now)},
      {"count", 1}};
  // An event that cannot be written is not worth failing the reconcile for, but is worth a line.
  auto created = client_.Create(kube::CollectionPath(kube::kEvents, ns), event);
  if (created.ok()) {
    ++outcome.events;
  } else {
    Log("warning", "cannot record an event",
        {{"pipeline", ns + "/" + meta["name"].get<std::string>()},
         {"reason", reason},
         {"error", created.error().message}});
  }
}

Status Reconciler::Act(const std::string& ns, const ConfigMapWrite& write) const {
  const std::string path = kube::ObjectPath(kube::kConfigMaps, ns, write.name);
  if (write.create) {
    auto created = client_.Create(kube::CollectionPath(kube::kConfigMaps, ns), write.body);
    if (created.ok()) return Done{};
    if (created.error().kind != ErrorKind::kConflict) return created.error();
    // Someone created it since we looked: bring its data to ours.
    auto patched = client_.MergePatch(path, {{"data", write.body["data"]}});
    if (!patched) return patched.error();
    return Done{};
  }
  auto patched = client_.MergePatch(path, write.body);
  if (!patched) return patched.error();
  return Done{};
}

Status Reconciler::Act(const std::string& ns, const ObjectWrite& write) const {
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

Result<RouterObjects> Reconciler::ObserveRouter(const model::Pipeline& pipeline) const {
  RouterObjects out;
  if (!pipeline.spec.router) return out;
  const std::string name = api::RouterName(pipeline);
  const std::string& ns = pipeline.namespace_name;
  const std::pair<const kube::ResourceType*, std::optional<json>*> objects[] = {
      {&kRouterServiceAccounts, &out.service_account},
      {&kRouterRoleBindings, &out.role_binding},
      {&kube::kDeployments, &out.deployment},
      {&kRouterServices, &out.service}};
  for (const auto& [type, slot] : objects) {
    auto got = client_.Get(kube::ObjectPath(*type, ns, name));
    if (got.ok()) {
      *slot = std::move(*got);
    } else if (got.error().kind != ErrorKind::kNotFound) {
      return got.error();
    }
  }
  return out;
}

namespace {
std::string ResourceVersion(const json& object) {
  return StringField(Member(object, "metadata"), "resourceVersion");
}
}  // namespace

std::optional<json> Reconciler::Latest(const std::string& key, std::optional<json> cached) {
  std::lock_guard lock(mu_);
  auto it = written_.find(key);
  if (it == written_.end()) return cached;
  if (cached && it->second.superseded.contains(ResourceVersion(*cached))) return it->second.object;
  written_.erase(it);  // caught up, deleted, or written by someone else since: the cache rules
  return cached;
}

void Reconciler::RememberWritten(const std::string& key, const json& decided_from,
                                 const std::string& cached_version, json written) {
  std::lock_guard lock(mu_);
  Written& w = written_[key];
  w.superseded.insert(cached_version);
  w.superseded.insert(ResourceVersion(decided_from));
  w.object = std::move(written);
}

Result<Reconciler::Outcome> Reconciler::Reconcile(const std::string& key) {
  Outcome outcome;
  std::optional<json> cached = pipelines_.Get(key);
  const std::string cached_version = cached ? ResourceVersion(*cached) : "";
  const auto object = Latest(key, std::move(cached));
  if (!object) {
    // Deleted: its Deployments go with it through their owner references.
    std::lock_guard lock(mu_);
    memory_.erase(key);
    return outcome;
  }

  // Observe.
  Observed observed;
  observed.object = *object;
  observed.now = clock_();
  observed.deployments = ObserveDeployments(*object);
  const api::ParsedPipeline parsed = ParseObserved(*object);
  if (parsed.pipeline) observed.metrics = metrics_(*parsed.pipeline);
  // The routing ConfigMap, for an optimizer that hands the data plane anything.
  if (parsed.pipeline &&
      (parsed.pipeline->spec.router ||
       optimizer::OptimizerOf(parsed.pipeline->spec).data_plane != optimizer::DataPlane::kNone)) {
    auto routing = client_.Get(kube::ObjectPath(kube::kConfigMaps, parsed.pipeline->namespace_name,
                                                api::RoutingConfigMapName(*parsed.pipeline)));
    if (routing.ok()) {
      observed.routing_config_map = *routing;
    } else if (routing.error().kind != ErrorKind::kNotFound) {
      return routing.error();
    }
  }
  if (parsed.pipeline) {
    auto router = ObserveRouter(*parsed.pipeline);
    if (!router) return router.error();
    observed.router = std::move(*router);
    observed.router_cluster_role = router_cluster_role_;
  }
  observed.memory = Remembered(key, *object, parsed, observed.now);
  if (parsed.pipeline && nodes_ != nullptr && pods_ != nullptr) {
    // No nodes in view (not synced, or no rights to list them) is no news about capacity.
    const std::vector<json> nodes = nodes_->List();
    if (!nodes.empty()) {
      observed.capacity = ComputeCapacity(*parsed.pipeline, nodes, pods_->List());
    }
  }

  // Decide.
  const auto start = std::chrono::steady_clock::now();
  Decision decision = Decide(observed, parsed);
  const double decide_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  {
    std::lock_guard lock(mu_);
    // Kept only once recalled in full (Remembered); until then each reconcile recalls again.
    if (memory_.contains(key)) memory_[key] = decision.memory;
  }
  if (decision.status.contains("solver") &&
      decision.status["solver"].value("durationMs", 0.0) == 0.0 && !decision.events.empty()) {
    decision.status["solver"]["durationMs"] = std::round(decide_ms * 1000) / 1000;
  }

  // Act.
  const std::string ns = (*object)["metadata"]["namespace"];
  for (const DeploymentWrite& write : decision.writes) {
    if (Status s = Act(ns, write, outcome); !s) return s.error();
  }
  if (decision.routing) {
    if (Status s = Act(ns, *decision.routing); !s) return s.error();
    outcome.routing_written = true;
  }
  if (decision.router_pipeline) {
    if (Status s = Act(ns, *decision.router_pipeline); !s) return s.error();
    outcome.routing_written = true;
  }
  for (const ObjectWrite& write : decision.router) {
    if (Status s = Act(ns, write); !s) return s.error();
    ++outcome.router_writes;
  }

  // Report.
  outcome.conditions = decision.status.value("conditions", json::array());
  if (decision.plan) {
    for (const auto& t : decision.status["plan"].value("tasks", json::array())) {
      outcome.deployments.push_back(t.value("deployment", ""));
    }
  }
  const json previous = object->value("status", json::object());
  if (decision.status != previous) {
    const std::string name = (*object)["metadata"]["name"];
    // Keys the decision left out are removed, not kept by the merge.
    auto written =
        client_.MergePatch(kube::ObjectPath(kInferencePipelines, ns, name, "status"),
                           {{"status", kube::MergePatchFrom(previous, decision.status)}});
    if (!written) return written.error();
    RememberWritten(key, *object, cached_version, std::move(*written));
    outcome.status_written = true;
    const bool newly_invalid =
        !parsed.pipeline &&
        (ConditionStatus(previous.value("conditions", json::array()), "Ready") != "False" ||
         previous.value("observedGeneration", 0L) !=
             decision.status.value("observedGeneration", 0L));
    if (newly_invalid) {
      Emit(*object, "Warning", reason::kInvalidSpec,
           parsed.errors.empty() ? "invalid spec" : parsed.errors.front().ToString(), observed.now,
           outcome);
    }
  }
  for (const std::string& message : decision.events) {
    Emit(*object, "Normal", "PlanChanged", message, observed.now, outcome);
  }
  for (const Event& warning : decision.warnings) {
    Emit(*object, "Warning", warning.reason, warning.message, observed.now, outcome);
  }
  for (const Event& notice : decision.notices) {
    Emit(*object, "Normal", notice.reason, notice.message, observed.now, outcome);
  }
  for (const Revert& revert : decision.reverts) {
    Emit(*object, "Warning", reason::kChangeReverted, revert.Message(), observed.now, outcome);
    outcome.reverted_fields.push_back(revert.field);
  }
  outcome.requeue_after_seconds = decision.requeue_after_seconds;
  outcome.cost_per_hour = decision.status.value("costPerHour", 0.0);
  outcome.decide_seconds = decide_ms / 1000;
  const json& served =
      Member(Member(Member(decision.status, "observed"), "dataPlane"), "servedAccuracy");
  if (served.is_number()) outcome.served_accuracy = served.get<double>();
  outcome.plan = std::move(decision.plan);
  outcome.capacity = std::move(observed.capacity);
  return outcome;
}

}  // namespace pipescale::reconciler
