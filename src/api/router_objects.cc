#include "api/router_objects.h"

#include <algorithm>
#include <cmath>

#include "api/pod_placement.h"

namespace pipescale::api {
namespace {

using nlohmann::json;

// How long a router replica on a lost node waits to be replaced (api/pod_placement.h): its own
// start-up, about a second.
constexpr int kRouterStartupSeconds = 1;

// A router pod's grace period: its drain, the time it finishes its requests in and a few
// seconds to exit, at least Kubernetes' default 30.
int RouterGraceSeconds(const model::Pipeline& pipeline) {
  const double seconds = model::kRouterDrainSeconds + pipeline.RouterFinishSeconds() + 5;
  return std::max(30, static_cast<int>(std::ceil(seconds)));
}

json Metadata(const model::Pipeline& pipeline, const Owner& owner) {
  return {{"name", RouterName(pipeline)},
          {"namespace", pipeline.namespace_name},
          {"labels", RouterLabels(pipeline)},
          {"ownerReferences", json::array({OwnerReference(owner)})}};
}

// What selects the router's pods: its Deployment's, its Service's, its budget's and its spread's.
json RouterSelector(const model::Pipeline& pipeline) {
  return {{"pipescale.io/router", pipeline.name}};
}

json RouterContainer(const model::Pipeline& pipeline, const model::RouterSpec& router) {
  const std::string threads = std::to_string(router.threads);
  return {
      {"name", "router"},
      {"image", router.image},
      {"args",
       {"--pipeline", pipeline.name, "--namespace", pipeline.namespace_name, "--threads", threads,
        // The pod's own address: a local cluster's pods share one network namespace.
        "--listen", "$(POD_IP):" + std::to_string(kRouterPort), "--metrics-listen",
        "$(POD_IP):" + std::to_string(kRouterMetricsPort), "--drop-policy", router.drop_policy,
        "--max-body-bytes", std::to_string(router.max_body_bytes)}},
      {"env",
       {{{"name", "POD_IP"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}}}},
      {"ports",
       {{{"name", "http"}, {"containerPort", kRouterPort}},
        // The replicas' counts at the pods (router/peers.h), pod to pod: no Service port.
        {{"name", "peers"}, {"containerPort", kRouterPort}, {"protocol", "UDP"}},
        {{"name", "metrics"}, {"containerPort", kRouterMetricsPort}}}},
      {"readinessProbe",
       {{"httpGet", {{"path", "/v2/health/ready"}, {"port", "http"}}}, {"periodSeconds", 1}}},
      {"resources", {{"requests", {{"cpu", threads}, {"memory", "64Mi"}}}}}};
}

}  // namespace

std::string RouterName(const model::Pipeline& pipeline) { return pipeline.name + "-router"; }

json RouterLabels(const model::Pipeline& pipeline) {
  return {{"app.kubernetes.io/name", "pipescale-router"},
          {"app.kubernetes.io/instance", pipeline.name},
          {"app.kubernetes.io/component", "router"},
          {"app.kubernetes.io/managed-by", "pipescale"},
          {"pipescale.io/router", pipeline.name}};
}

json BuildRouterServiceAccount(const model::Pipeline& pipeline, const Owner& owner) {
  return {
      {"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", Metadata(pipeline, owner)}};
}

json BuildRouterRoleBinding(const model::Pipeline& pipeline, const Owner& owner,
                            const std::string& cluster_role) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "RoleBinding"},
          {"metadata", Metadata(pipeline, owner)},
          {"roleRef",
           {{"apiGroup", "rbac.authorization.k8s.io"},
            {"kind", "ClusterRole"},
            {"name", cluster_role}}},
          {"subjects",
           {{{"kind", "ServiceAccount"},
             {"name", RouterName(pipeline)},
             {"namespace", pipeline.namespace_name}}}}};
}

json BuildRouterDeployment(const model::Pipeline& pipeline, const Owner& owner, int replicas) {
  const model::RouterSpec router = pipeline.spec.router.value_or(model::RouterSpec{});
  const json selector = RouterSelector(pipeline);
  json deployment = {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", Metadata(pipeline, owner)},
      {"spec",
       {{"replicas", replicas},
        {"selector", {{"matchLabels", selector}}},
        {"template",
         {{"metadata", {{"labels", RouterLabels(pipeline)}}},
          {"spec",
           {{"serviceAccountName", RouterName(pipeline)},
            // The router's drain and the time it finishes its requests in, held ones included.
            {"terminationGracePeriodSeconds", RouterGraceSeconds(pipeline)},
            // One node's loss must not take every replica.
            {"topologySpreadConstraints", SpreadOverNodes(selector)},
            {"tolerations", ToleratingNodeLoss(json::array(), kRouterStartupSeconds)},
            {"containers", {RouterContainer(pipeline, router)}}}}}}}}};
  // The request path is as important as the models behind it.
  if (!pipeline.spec.priority_class_name.empty()) {
    deployment["spec"]["template"]["spec"]["priorityClassName"] = pipeline.spec.priority_class_name;
  }
  return deployment;
}

json BuildRouterService(const model::Pipeline& pipeline, const Owner& owner) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", Metadata(pipeline, owner)},
          {"spec",
           {{"selector", RouterSelector(pipeline)},
            {"ports",
             {{{"name", "http"}, {"port", kRouterPort}, {"targetPort", "http"}},
              {{"name", "metrics"}, {"port", kRouterMetricsPort}, {"targetPort", "metrics"}}}}}}};
}

json BuildRouterDisruptionBudget(const model::Pipeline& pipeline, const Owner& owner,
                                 const std::string& api_version) {
  // maxUnavailable, not minAvailable: a router of one replica may still be drained (a node
  // drain would otherwise wait for ever), one of two keeps one serving.
  return {
      {"apiVersion", api_version},
      {"kind", "PodDisruptionBudget"},
      {"metadata", Metadata(pipeline, owner)},
      {"spec", {{"maxUnavailable", 1}, {"selector", {{"matchLabels", RouterSelector(pipeline)}}}}}};
}

std::string PipelineForRouter(const json& object) {
  const json meta = object.value("metadata", json::object());
  return json{
      {"apiVersion", object.value("apiVersion", "pipescale.io/v1alpha1")},
      {"kind", object.value("kind", "InferencePipeline")},
      {"metadata",
       {{"name", meta.value("name", "")}, {"namespace", meta.value("namespace", "default")}}},
      {"spec", object.value("spec", json::object())}}
      .dump();
}

}  // namespace pipescale::api
