// Pipelines tests share, as the apiserver stores them: the smallest valid InferencePipeline, and
// "shop", the two-task chain the reconciler's and the operator's tests plan.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace pipescale::testing {

// One task `a` with one variant on one CPU class, and one path `p` with a 100 ms SLO.
inline nlohmann::json OneTaskPipeline(const std::string& name, const std::string& ns = "") {
  nlohmann::json metadata = {{"name", name}};
  if (!ns.empty()) metadata["namespace"] = ns;
  return {{"apiVersion", "pipescale.io/v1alpha1"},
          {"kind", "InferencePipeline"},
          {"metadata", metadata},
          {"spec",
           {{"hardwareClasses", {{{"name", "cpu"}}}},
            {"tasks",
             {{{"name", "a"},
               {"variants",
                {{{"name", "v"},
                  {"profiles",
                   {{{"hardwareClass", "cpu"}, {"latencyMs", {{"quadratic", {{"c", 5}}}}}}}}}}}}}},
            {"paths", {{{"name", "p"}, {"tasks", {"a"}}, {"sloMs", 100}}}}}}};
}

// "shop": detect -> classify on one CPU class (0.1 an hour), one variant each of accuracy 0.9
// whose batch of b rows takes 10 b + 20 ms (detect's `small`) or 10 b + 10 ms (classify's `tiny`),
// batches of up to 16, and one path `p` with a 500 ms SLO. A suite sets what it varies (mode,
// interval, metrics, behavior, the class's placement) on its copy.
inline nlohmann::json ShopPipeline(const std::string& name = "shop") {
  auto variant = [](const char* v, double c) {
    const nlohmann::json profile = {
        {"hardwareClass", "cpu"}, {"latencyMs", {{"quadratic", {{"a", 0}, {"b", 10}, {"c", c}}}}}};
    return nlohmann::json{{"name", v},
                          {"accuracy", 0.9},
                          {"batchSize", {{"max", 16}}},
                          {"profiles", nlohmann::json::array({profile})}};
  };
  return {{"apiVersion", "pipescale.io/v1alpha1"},
          {"kind", "InferencePipeline"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"hardwareClasses", nlohmann::json::array({{{"name", "cpu"}, {"costPerHour", 0.1}}})},
            {"tasks",
             nlohmann::json::array({{{"name", "detect"},
                                     {"next", nlohmann::json::array({{{"task", "classify"}}})},
                                     {"variants", nlohmann::json::array({variant("small", 20)})}},
                                    {{"name", "classify"},
                                     {"variants", nlohmann::json::array({variant("tiny", 10)})}}})},
            {"paths", nlohmann::json::array(
                          {{{"name", "p"}, {"tasks", {"detect", "classify"}}, {"sloMs", 500}}})}}}};
}

// spec.metrics.pathRate over 5 s windows: the default 30 s windows underestimate fresh series
// for their first 30 s, which would only make tests slow.
inline const char* kFastRateQuery =
    R"(sum(rate(pipescale_requests_total{namespace="{{namespace}}",pipeline="{{pipeline}}",path="{{path}}"}[5s])))";

// "shop" as the tests on the local cluster run it: planned every 2 s from the rates the
// Prometheus at `prometheus_url` measures over 5 s, scaled down as soon as the load falls.
inline nlohmann::json ShopPipelineOnCluster(const std::string& name,
                                            const std::string& prometheus_url) {
  nlohmann::json pipeline = ShopPipeline(name);
  pipeline["spec"]["interval"] = "2s";
  pipeline["spec"]["behavior"] = {{"scaleDown", {{"stabilizationWindowSeconds", 0}}}};
  pipeline["spec"]["metrics"] = {{"prometheusURL", prometheus_url}, {"pathRate", kFastRateQuery}};
  return pipeline;
}

// The traffic pipeline the request path's tests walk: detect -> classify (path cars, 200 ms) and
// detect -> recognize (faces, 300 ms, sheddable); detect has a big and a small variant, big on
// both classes (gpu, and the cheaper spot a burst pool may use).
inline constexpr const char* kTrafficPipeline = R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: traffic}
spec:
  hardwareClasses: [{name: gpu}, {name: spot}]
  tasks:
    - name: detect
      next: [{task: classify}, {task: recognize}]
      variants:
        - {name: big, accuracy: 0.9, profiles: [{hardwareClass: gpu, latencyMs: {quadratic: {c: 40}}}, {hardwareClass: spot, latencyMs: {quadratic: {c: 40}}}]}
        - {name: small, accuracy: 0.6, profiles: [{hardwareClass: gpu, latencyMs: {quadratic: {c: 10}}}]}
    - {name: classify, variants: [{name: v, profiles: [{hardwareClass: gpu, latencyMs: {quadratic: {c: 20}}}]}]}
    - {name: recognize, variants: [{name: v, profiles: [{hardwareClass: gpu, latencyMs: {quadratic: {c: 20}}}]}]}
  paths:
    - {name: cars, tasks: [detect, classify], sloMs: 200}
    - {name: faces, tasks: [detect, recognize], sloMs: 300, priority: sheddable}
)";

// kTrafficPipeline's indices, in the order the pipeline lists them (routing::Graph's).
namespace traffic {
inline constexpr int kDetect = 0, kClassify = 1, kRecognize = 2;  // tasks
inline constexpr int kCars = 0, kFaces = 1;                       // paths
inline constexpr int kBig = 0, kSmall = 1;                        // detect's variants
inline constexpr int kGpu = 0, kSpot = 1;                         // hardware classes
}  // namespace traffic

}  // namespace pipescale::testing
