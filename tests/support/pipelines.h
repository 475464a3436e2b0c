// Pipelines tests share: the smallest valid InferencePipeline, as the apiserver stores it.
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

}  // namespace pipescale::testing
