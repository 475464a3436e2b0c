#include "api/deployment.h"

#include <algorithm>
#include <cmath>

#include "api/deployment_view.h"
#include "api/plan_json.h"
#include "api/pod_placement.h"
#include "common/json_fields.h"

namespace pipescale::api {
namespace {

using nlohmann::json;

// The member `key` of `parent` as an object to merge into. Validation (api/pod_template.h) lets
// only objects or nothing through where this is used, so nothing a user wrote is replaced; the
// check keeps the build from throwing whatever it is handed.
json& ObjectAt(json& parent, const char* key) {
  json& member = parent[key];
  if (!member.is_object()) member = json::object();
  return member;
}

// Sets env `name` on a container, replacing an existing entry.
void SetEnv(json& container, const std::string& name, const std::string& value) {
  json& env = container["env"];
  if (!env.is_array()) env = json::array();
  for (json& e : env) {
    if (StringField(e, "name") == name) {
      e = {{"name", name}, {"value", value}};
      return;
    }
  }
  env.push_back({{"name", name}, {"value", value}});
}

json QuantityMap(const std::map<std::string, std::string>& m) {
  json out = json::object();
  for (const auto& [k, v] : m) out[k] = v;
  return out;
}

// The emulated model server (tests/emulator), serving the Open Inference Protocol on 8080 and
// Ready once its model has loaded.
json DefaultContainer() {
  return {{"name", "model"},
          {"image", "pipescale/model-server:dev"},
          {"ports", json::array({{{"name", "http"}, {"containerPort", 8080}}})},
          {"readinessProbe",
           {{"httpGet", {{"path", "/v2/health/ready"}, {"port", "http"}}}, {"periodSeconds", 1}}}};
}

}  // namespace

json OwnerReference(const Owner& owner) {
  return {{"apiVersion", owner.api_version},
          {"kind", owner.kind},
          {"name", owner.name},
          {"uid", owner.uid},
          {"controller", true},
          {"blockOwnerDeletion", true}};
}

std::string DeploymentName(const model::Pipeline& pipeline, const model::Task& task,
                           const model::Variant& variant, const std::string& hardware_class) {
  if (!variant.deployment_name.empty()) return variant.deployment_name;
  return pipeline.name + "-" + task.name + "-" + variant.name + "-" + hardware_class;
}

json DeploymentLabels(const model::Pipeline& pipeline, const model::Task& task,
                      const model::Variant& variant, const std::string& hardware_class) {
  return {{"app.kubernetes.io/name", task.name},
          {"app.kubernetes.io/instance", pipeline.name},
          {"app.kubernetes.io/component", "model-server"},
          {"app.kubernetes.io/managed-by", "pipescale"},
          {"pipescale.io/pipeline", pipeline.name},
          {"pipescale.io/task", task.name},
          {"pipescale.io/variant", variant.name},
          {"pipescale.io/hardware-class", hardware_class}};
}

json BuildDeployment(const model::Pipeline& pipeline, const Owner& owner, const model::Task& task,
                     const model::Variant& variant, const model::HardwareClass& hardware_class,
                     int replicas, int batch_size, const model::ServerQueue& queue) {
  const json labels = DeploymentLabels(pipeline, task, variant, hardware_class.name);
  json selector = {{"pipescale.io/pipeline", pipeline.name},
                   {"pipescale.io/task", task.name},
                   {"pipescale.io/variant", variant.name},
                   {"pipescale.io/hardware-class", hardware_class.name}};
  json pod = variant.pod_template.get().is_object() ? variant.pod_template.get() : json::object();
  ObjectAt(ObjectAt(pod, "metadata"), "labels").update(labels);
  json& spec = ObjectAt(pod, "spec");
  json& containers = spec["containers"];
  if (!containers.is_array() || containers.empty()) {
    containers = json::array({DefaultContainer()});
  }
  json& container = containers[0];
  if (!container.is_object()) container = DefaultContainer();
  if (!hardware_class.requests.empty()) {
    ObjectAt(ObjectAt(container, "resources"), "requests")
        .update(QuantityMap(hardware_class.requests));
  }
  if (!hardware_class.limits.empty()) {
    ObjectAt(ObjectAt(container, "resources"), "limits").update(QuantityMap(hardware_class.limits));
  }
  if (!variant.RouterBatches()) {
    for (const auto& [name, value] : BatchEnv(variant.batch_env, batch_size, queue, false)) {
      SetEnv(container, name, value);
    }
  }
  for (const auto& [name, value] : ServerQueueEnv(queue)) SetEnv(container, name, value);
  SetEnv(container, "PIPESCALE_PIPELINE", pipeline.name);
  SetEnv(container, "PIPESCALE_TASK", task.name);
  SetEnv(container, "PIPESCALE_VARIANT", variant.name);
  if (!hardware_class.node_selector.empty()) {
    ObjectAt(spec, "nodeSelector").update(QuantityMap(hardware_class.node_selector));
  }
  const json& tolerations = hardware_class.tolerations.get();
  if (tolerations.is_array() && !tolerations.empty()) spec["tolerations"] = tolerations;
  spec["tolerations"] =
      ToleratingNodeLoss(spec.value("tolerations", json()),
                         static_cast<int>(std::ceil(hardware_class.startup_seconds)));
  if (!spec.contains("topologySpreadConstraints")) {
    spec["topologySpreadConstraints"] = SpreadOverNodes(selector);
  }
  // The pipeline's, over any in the template: the room the plan counts on is the priority's.
  if (!pipeline.spec.priority_class_name.empty()) {
    spec["priorityClassName"] = pipeline.spec.priority_class_name;
  }

  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata",
           {{"name", DeploymentName(pipeline, task, variant, hardware_class.name)},
            {"namespace", pipeline.namespace_name},
            {"labels", labels},
            {"ownerReferences", json::array({OwnerReference(owner)})}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", selector}}},
            // A batch change restarts every pod: new ones start before old ones stop, so the
            // Ready capacity never drops below the plan's during the rollout.
            {"strategy",
             {{"type", "RollingUpdate"},
              {"rollingUpdate", {{"maxSurge", "25%"}, {"maxUnavailable", 0}}}}},
            {"template", pod}}}};
}

std::string RoutingConfigMapName(const model::Pipeline& pipeline) {
  return pipeline.name + "-routing";
}

namespace {

// Kairos's and MArk's pools, or Loki's tables; {} for other plans.
nlohmann::json OptimizerPart(const model::Plan& plan) {
  if (const auto* pools = plan.pools()) {
    // Kairos and MArk: who serves which query sizes, for a dispatcher (kairos::Dispatch).
    const nlohmann::ordered_json data = {{"optimizer", plan.report.optimizer},
                                         {"pools", PoolsToJson(*pools, /*rounded=*/true)}};
    return {{kPoolsRoutingKey, data.dump()}};
  }
  const model::AccuracyScalingPlan* loki = plan.accuracy_scaling();
  if (loki == nullptr) return nlohmann::json::object();
  const nlohmann::ordered_json routing = {{"phase", model::PhaseName(loki->phase)},
                                          {"tables", RoutingToJson(*loki, /*rounded=*/true)},
                                          {"backups", BackupsToJson(*loki, /*rounded=*/true)}};
  return {{kLokiRoutingKey, routing.dump()}};
}

}  // namespace

nlohmann::json RoutingConfigMapData(const model::Pipeline& pipeline, const model::Plan& plan) {
  nlohmann::json data = OptimizerPart(plan);
  const nlohmann::ordered_json batches = BatchesToJson(RouterBatches(pipeline, plan));
  if (!batches.empty()) data[kBatchingKey] = nlohmann::ordered_json{{"batches", batches}}.dump();
  return data;
}

nlohmann::json BuildRoutingConfigMap(const model::Pipeline& pipeline, const Owner& owner,
                                     const model::Plan& plan) {
  return {
      {"apiVersion", "v1"},
      {"kind", "ConfigMap"},
      {"metadata",
       {{"name", RoutingConfigMapName(pipeline)},
        {"namespace", pipeline.namespace_name},
        {"labels",
         {{"pipescale.io/pipeline", pipeline.name}, {"app.kubernetes.io/managed-by", "pipescale"}}},
        {"ownerReferences", json::array({OwnerReference(owner)})}}},
      {"data", RoutingConfigMapData(pipeline, plan)}};
}

}  // namespace pipescale::api
