#include "reconciler/router.h"

#include <algorithm>
#include <cmath>

#include "api/deployment.h"
#include "api/router_objects.h"

namespace pipescale::reconciler {
namespace {

using nlohmann::json;

// What the operator keeps on the router's Deployment: its replicas and its one container.
json ManagedPart(const json& deployment) {
  const json spec = deployment.value("spec", json::object());
  const json containers = spec.value("template", json::object())
                              .value("spec", json::object())
                              .value("containers", json::array());
  const json c = containers.is_array() && !containers.empty() ? containers[0] : json::object();
  return {{"replicas", spec.value("replicas", json())},
          {"image", c.value("image", json())},
          {"args", c.value("args", json())}};
}

}  // namespace

int RouterReplicas(const model::RouterSpec& router, std::optional<double> arrival_rps,
                   std::optional<int> running) {
  int wanted = running.value_or(router.min_replicas);
  if (arrival_rps) {
    wanted = static_cast<int>(std::ceil(*arrival_rps / router.requests_per_second_per_replica));
  }
  return std::clamp(wanted, router.min_replicas, router.max_replicas);
}

std::vector<ObjectWrite> RouterWrites(const model::Pipeline& pipeline, const std::string& uid,
                                      const std::string& cluster_role, const RouterObjects& current,
                                      std::optional<double> arrival_rps) {
  std::vector<ObjectWrite> writes;
  if (!pipeline.spec.router) return writes;
  const api::Owner owner{.name = pipeline.name, .uid = uid};
  const std::string name = api::RouterName(pipeline);
  if (!current.service_account) {
    writes.push_back(
        {kRouterServiceAccounts, name, true, api::BuildRouterServiceAccount(pipeline, owner)});
  }
  if (!current.role_binding) {
    writes.push_back({kRouterRoleBindings, name, true,
                      api::BuildRouterRoleBinding(pipeline, owner, cluster_role)});
  }
  std::optional<int> running;
  if (current.deployment) {
    const json r = current.deployment->value("spec", json::object()).value("replicas", json());
    if (r.is_number_integer()) running = r.get<int>();
  }
  const int replicas = RouterReplicas(*pipeline.spec.router, arrival_rps, running);
  const json desired = api::BuildRouterDeployment(pipeline, owner, replicas);
  if (!current.deployment) {
    writes.push_back({kube::kDeployments, name, true, desired});
  } else if (ManagedPart(*current.deployment) != ManagedPart(desired)) {
    writes.push_back({kube::kDeployments,
                      name,
                      false,
                      {{"spec",
                        {{"replicas", replicas},
                         {"template", {{"spec", desired["spec"]["template"]["spec"]}}}}}}});
  }
  if (!current.service) {
    writes.push_back({kRouterServices, name, true, api::BuildRouterService(pipeline, owner)});
  }
  return writes;
}

std::optional<ConfigMapWrite> RouterPipelineWrite(const model::Pipeline& pipeline,
                                                  const std::string& uid,
                                                  const std::optional<json>& current,
                                                  const std::string& pipeline_json) {
  if (!pipeline.spec.router) return std::nullopt;
  const std::string name = api::RoutingConfigMapName(pipeline);
  const json data = {{api::kPipelineKey, pipeline_json}};
  if (!current) {
    json body =
        api::BuildRoutingConfigMap(pipeline, {.name = pipeline.name, .uid = uid}, model::Plan{});
    body["data"] = data;
    return ConfigMapWrite{true, name, std::move(body)};
  }
  const json have = current->value("data", json::object());
  if (have.is_object() && have.value(api::kPipelineKey, json()) == pipeline_json) {
    return std::nullopt;
  }
  return ConfigMapWrite{false, name, {{"data", data}}};
}

}  // namespace pipescale::reconciler
