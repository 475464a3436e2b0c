// The router a pipeline asks for (spec.router): its ServiceAccount, RoleBinding, Deployment,
// Service and PodDisruptionBudget created when missing, the Deployment's replicas and container
// kept as decided, and the pipeline's graph in the routing ConfigMap. Replicas follow the measured
// arrival rate over what one replica serves, and hold when the rate is not known.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/config_map.h"
#include "api/deployment_view.h"
#include "kube/client.h"
#include "model/pipeline.h"
#include "reconciler/writes.h"

namespace pipescale::reconciler {

inline const kube::ResourceType kRouterServiceAccounts{"v1", "serviceaccounts", true};
inline const kube::ResourceType kRouterServices{"v1", "services", true};
inline const kube::ResourceType kRouterRoleBindings{"rbac.authorization.k8s.io/v1", "rolebindings",
                                                    true};

// The router's objects as read: which exist, and its Deployment (nullopt when absent), whose
// replicas and container the operator keeps as decided.
struct RouterObjects {
  bool service_account = false, role_binding = false, service = false, disruption_budget = false;
  std::optional<api::DeploymentView> deployment;
  // The PodDisruptionBudget's apiVersion the cluster serves; nullopt: none (it makes none).
  std::optional<std::string> disruption_budget_api;
};

// The PodDisruptionBudget's versions, newest first: policy/v1 from Kubernetes 1.21, v1beta1 before
// (kube::FirstServedVersion picks the one a cluster serves).
inline const std::vector<std::string> kDisruptionBudgetVersions = {"policy/v1", "policy/v1beta1"};

// The PodDisruptionBudgets at `api_version` (one of kDisruptionBudgetVersions).
kube::ResourceType DisruptionBudgets(const std::string& api_version);

// A create when `create`, else a JSON merge patch.
struct ObjectWrite {
  kube::ResourceType type;
  std::string name;
  bool create = false;
  nlohmann::json body;
};

// ceil(arrival / per-replica capacity) within [min, max]; without a rate, what runs (or the
// minimum when nothing does): never fewer replicas because the load is not known.
int RouterReplicas(const model::RouterSpec& router, std::optional<double> arrival_rps,
                   std::optional<int> running);

std::vector<ObjectWrite> RouterWrites(const model::Pipeline& pipeline, const std::string& uid,
                                      const std::string& cluster_role, const RouterObjects& current,
                                      std::optional<double> arrival_rps);

// The routing ConfigMap's pipeline.json, created or patched when it differs from `pipeline_json`.
std::optional<ConfigMapWrite> RouterPipelineWrite(const model::Pipeline& pipeline,
                                                  const std::string& uid,
                                                  const std::optional<api::ConfigMapView>& current,
                                                  const std::string& pipeline_json);

}  // namespace pipescale::reconciler
