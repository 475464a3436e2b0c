#include "reconciler/router.h"

#include <algorithm>
#include <cmath>

#include "api/deployment.h"
#include "api/router_objects.h"

namespace pipescale::reconciler {
namespace {

using nlohmann::json;

// What the operator keeps on the router's Deployment: its replicas and its one container's
// image and arguments.
bool SameManagedPart(const api::DeploymentView& have, const api::DeploymentView& want) {
  const auto image = [](const api::DeploymentView& d) {
    return d.container ? d.container->image : std::nullopt;
  };
  const auto args = [](const api::DeploymentView& d) {
    return d.container ? d.container->args : std::vector<std::string>{};
  };
  return have.replicas == want.replicas && image(have) == image(want) && args(have) == args(want);
}

}  // namespace

kube::ResourceType DisruptionBudgets(const std::string& api_version) {
  return {api_version, "poddisruptionbudgets", true};
}

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
  const std::optional<int> running =
      current.deployment ? current.deployment->replicas : std::nullopt;
  const int replicas = RouterReplicas(*pipeline.spec.router, arrival_rps, running);
  const json desired = api::BuildRouterDeployment(pipeline, owner, replicas);
  if (!current.deployment) {
    writes.push_back({kube::kDeployments, name, true, desired});
  } else if (!SameManagedPart(*current.deployment, api::ReadDeployment(desired))) {
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
  if (!current.disruption_budget && current.disruption_budget_api) {
    const std::string& version = *current.disruption_budget_api;
    writes.push_back({DisruptionBudgets(version), name, true,
                      api::BuildRouterDisruptionBudget(pipeline, owner, version)});
  }
  return writes;
}

std::optional<ConfigMapWrite> RouterPipelineWrite(const model::Pipeline& pipeline,
                                                  const std::string& uid,
                                                  const std::optional<api::ConfigMapView>& current,
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
  if (const auto have = current->data.find(api::kPipelineKey);
      have != current->data.end() && have->second == pipeline_json) {
    return std::nullopt;
  }
  return ConfigMapWrite{false, name, {{"data", data}}};
}

}  // namespace pipescale::reconciler
