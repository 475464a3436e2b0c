// The Deployments the operator writes for a pipeline: one per (task, variant, hardware class)
// in use, built from the variant's pod template plus the class overlay, and the few fields it
// owns on them (replicas, the batch-size env).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "model/pipeline.h"
#include "model/plan.h"

namespace pipescale::api {

// <pipeline>-<task>-<variant>-<class>, or the variant's deploymentName when it adopts one.
std::string DeploymentName(const model::Pipeline& pipeline, const model::Task& task,
                           const model::Variant& variant, const std::string& hardware_class);

// Labels that identify a Deployment of the pipeline: pipescale.io/{pipeline,task,variant,
// hardware-class} plus the app.kubernetes.io ones.
nlohmann::json DeploymentLabels(const model::Pipeline& pipeline, const model::Task& task,
                                const model::Variant& variant, const std::string& hardware_class);

struct Owner {
  std::string api_version = "pipescale.io/v1alpha1";
  std::string kind = "InferencePipeline";
  std::string name;
  std::string uid;
};

// The pipeline as controller of what the operator creates: deleting it deletes them.
nlohmann::json OwnerReference(const Owner& owner);

// A full Deployment for create. The first container gets the class's resources and the env
// vars MAX_BATCH_SIZE (or the variant's batchSize.env), PIPESCALE_{PIPELINE,TASK,VARIANT} and
// the server-queue ones `queue` sets (api/deployment_view.h).
nlohmann::json BuildDeployment(const model::Pipeline& pipeline, const Owner& owner,
                               const model::Task& task, const model::Variant& variant,
                               const model::HardwareClass& hardware_class, int replicas,
                               int batch_size, const model::ServerQueue& queue = {});

// What a plan hands the data plane: the ConfigMap <pipeline>-routing, owned by the pipeline.
// Loki's plans write one key `routing.json`: {"phase", "tables": RoutingToJson, "backups":
// BackupsToJson} (no drop budgets: the router budgets a late request from its path's slack,
// routing/loki.h; an older operator's "budgetsMs" is ignored); Kairos's and MArk's `pools.json`:
// {"optimizer", "pools": PoolsToJson} (api/plan_json.h, rounded so that noise in the rates does
// not rewrite it); other plans nothing.
// Variants whose batches the router forms add `batching.json`: {"batches": BatchesToJson}.
inline constexpr const char* kLokiRoutingKey = "routing.json";
inline constexpr const char* kPoolsRoutingKey = "pools.json";
inline constexpr const char* kBatchingKey = "batching.json";
std::string RoutingConfigMapName(const model::Pipeline& pipeline);
nlohmann::json RoutingConfigMapData(const model::Pipeline& pipeline, const model::Plan& plan);
nlohmann::json BuildRoutingConfigMap(const model::Pipeline& pipeline, const Owner& owner,
                                     const model::Plan& plan);

}  // namespace pipescale::api
