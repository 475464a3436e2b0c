// Nodes, pods, PriorityClasses and a pipeline as the capacity count and the arbiter read them,
// for their tests.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "api/pipeline_parse.h"
#include "model/pipeline.h"

namespace pipescale::testing {

using nlohmann::json;

// One GPU class (a GPU per replica, tolerating the GPU taint) and one CPU class (2 cores).
inline model::Pipeline Pipeline(const std::string& name = "shop") {
  const json profile = [] {
    return json{{"latencyMs", {{"quadratic", {{"a", 0}, {"b", 10}, {"c", 5}}}}}};
  }();
  json gpu = profile, cpu = profile;
  gpu["hardwareClass"] = "gpu";
  cpu["hardwareClass"] = "cpu";
  const json spec = {
      {"apiVersion", "pipescale.io/v1alpha1"},
      {"kind", "InferencePipeline"},
      {"metadata", {{"name", name}, {"namespace", "ns"}}},
      {"spec",
       {{"hardwareClasses",
         {{{"name", "gpu"},
           {"costPerHour", 1},
           {"maxReplicas", 100},
           {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}},
           {"nodeSelector", {{"accelerator", "nvidia"}}},
           {"tolerations", {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}}}}},
          {{"name", "cpu"},
           {"costPerHour", 0.1},
           {"resources", {{"requests", {{"cpu", "2"}, {"memory", "1Gi"}}}}}}}},
        {"tasks",
         {{{"name", "detect"}, {"variants", {{{"name", "v"}, {"profiles", {gpu, cpu}}}}}}}},
        {"paths", {{{"name", "p"}, {"tasks", {"detect"}}, {"sloMs", 500}}}}}}};
  auto parsed = api::ParsePipeline(spec.dump());
  EXPECT_TRUE(parsed.pipeline.has_value());
  return *parsed.pipeline;
}

inline json Node(const std::string& name, int gpus, int cpus, bool tainted, bool ready = true) {
  json node = {
      {"metadata", {{"name", name}, {"labels", json::object()}}},
      {"spec", json::object()},
      {"status",
       {{"allocatable", {{"cpu", std::to_string(cpus)}, {"memory", "64Gi"}, {"pods", "110"}}},
        {"conditions", {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}}}}}};
  if (gpus > 0) {
    node["status"]["allocatable"]["nvidia.com/gpu"] = std::to_string(gpus);
    node["metadata"]["labels"]["accelerator"] = "nvidia";
  }
  if (tainted) {
    node["spec"]["taints"] = {{{"key", "nvidia.com/gpu"}, {"effect", "NoSchedule"}}};
  }
  return node;
}

// A pod on `node` ("" for unbound) asking for `gpus` GPUs and `cpu` cores; a model pod of
// `pipeline` (namespace ns) on `cls`, or no pipeline's when it is "".
inline json Pod(const std::string& node, int gpus, const std::string& cpu,
                const std::string& pipeline, const std::string& cls = "gpu") {
  json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"labels", json::object()}}},
              {"spec",
               {{"containers",
                 {{{"name", "c"},
                   {"resources", {{"requests", {{"cpu", cpu}}}, {"limits", json::object()}}}}}}}},
              {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  if (gpus > 0) {
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = std::to_string(gpus);
  }
  if (!pipeline.empty()) {
    pod["metadata"]["labels"] = {{"pipescale.io/pipeline", pipeline},
                                 {"pipescale.io/task", "detect"},
                                 {"pipescale.io/variant", "v"},
                                 {"pipescale.io/hardware-class", cls}};
  }
  return pod;
}

inline json PriorityClass(const std::string& name, int value, bool global_default = false) {
  return {{"metadata", {{"name", name}}}, {"value", value}, {"globalDefault", global_default}};
}

inline json WithPriority(json pod, int priority) {
  pod["spec"]["priority"] = priority;
  return pod;
}

}  // namespace pipescale::testing
