// The objects that run a pipeline's router (spec.router): a ServiceAccount bound to the
// router's ClusterRole in the pipeline's namespace, a Deployment of pipescale-router spread over
// the nodes, a Service in front of it and a PodDisruptionBudget that lets a drain take one
// replica at a time, all named <pipeline>-router and owned by the pipeline.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "api/deployment.h"
#include "model/pipeline.h"

namespace pipescale::api {

inline constexpr int kRouterPort = 8080;
inline constexpr int kRouterMetricsPort = 9090;
// Where the router serves the requests held at its door alone (in Prometheus's text format, as
// in the whole exposition): what the operator's door watch reads, a few hundred bytes.
inline constexpr const char* kRouterDoorPath = "/metrics/door";

std::string RouterName(const model::Pipeline& pipeline);

// The labels of the router's Deployment, pods and Service (not pipescale.io/pipeline: that
// label marks the pipeline's model Deployments).
nlohmann::json RouterLabels(const model::Pipeline& pipeline);

nlohmann::json BuildRouterServiceAccount(const model::Pipeline& pipeline, const Owner& owner);
nlohmann::json BuildRouterRoleBinding(const model::Pipeline& pipeline, const Owner& owner,
                                      const std::string& cluster_role);
nlohmann::json BuildRouterDeployment(const model::Pipeline& pipeline, const Owner& owner,
                                     int replicas);
nlohmann::json BuildRouterService(const model::Pipeline& pipeline, const Owner& owner);
// `api_version`: policy/v1, or policy/v1beta1 on an apiserver older than 1.21 (the shape is the
// same).
nlohmann::json BuildRouterDisruptionBudget(const model::Pipeline& pipeline, const Owner& owner,
                                           const std::string& api_version);

// The routing ConfigMap's key the router reads its pipeline from: the InferencePipeline's
// apiVersion, kind, name, namespace and spec, so it walks the DAG the operator plans.
inline constexpr const char* kPipelineKey = "pipeline.json";
std::string PipelineForRouter(const nlohmann::json& object);

}  // namespace pipescale::api
