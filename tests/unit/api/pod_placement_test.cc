// The operator's pods on a lost node: model replicas wait their class's start-up before they are
// replaced, routers their own second, a user's toleration of the taint stands, and replicas of one
// Deployment spread over the nodes.
#include "api/pod_placement.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "api/deployment.h"
#include "api/document.h"
#include "api/pipeline_parse.h"
#include "api/router_objects.h"

namespace pipescale::api {
namespace {

using nlohmann::json;

constexpr const char* kUnreachable = "node.kubernetes.io/unreachable";
constexpr const char* kNotReady = "node.kubernetes.io/not-ready";

// `class_fields` go into the one hardware class.
model::Pipeline Pipeline(const std::string& class_fields) {
  const std::string yaml = R"yaml(
apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: traffic, namespace: ns}
spec:
  router: {}
  hardwareClasses: [{name: gpu)yaml" +
                           class_fields +
                           R"yaml(}]
  tasks:
    - name: detect
      variants:
        - name: yolo
          profiles: [{hardwareClass: gpu, latencyMs: {quadratic: {a: 0, b: 3, c: 8}}}]
  paths: [{name: p, tasks: [detect], sloMs: 500}]
)yaml";
  ParsedPipeline parsed = ParsePipeline(yaml);
  EXPECT_TRUE(parsed.pipeline) << (parsed.errors.empty() ? "" : parsed.errors[0].ToString());
  return parsed.pipeline ? *parsed.pipeline : model::Pipeline{};
}

json PodSpec(const model::Pipeline& p) {
  return BuildDeployment(p, {}, p.spec.tasks[0], p.spec.tasks[0].variants[0],
                         p.spec.hardware_classes[0], 2, 4)["spec"]["template"]["spec"];
}

// The tolerations of `key` in `spec`.
std::vector<json> Of(const json& spec, const std::string& key) {
  std::vector<json> out;
  for (const json& t : spec["tolerations"]) {
    if (t.value("key", "") == key) out.push_back(t);
  }
  return out;
}

TEST(PodPlacement, AModelReplicaOnALostNodeWaitsItsClassesStartUpThenIsReplaced) {
  for (const auto& [startup, seconds] :
       {std::pair{"", 0}, {", startupSeconds: 6", 6}, {", startupSeconds: 2.5", 3}}) {
    const json spec = PodSpec(Pipeline(startup));
    for (const char* key : {kUnreachable, kNotReady}) {
      const std::vector<json> found = Of(spec, key);
      ASSERT_EQ(found.size(), 1u) << key << " " << spec.dump();
      EXPECT_EQ(found[0]["effect"], "NoExecute");
      EXPECT_EQ(found[0]["operator"], "Exists");
      EXPECT_EQ(found[0]["tolerationSeconds"], seconds) << startup;
    }
  }
}

TEST(PodPlacement, TheClassesOwnTolerationsStayAndAUsersChoiceForALostNodeStands) {
  const json spec = PodSpec(Pipeline(
      ", startupSeconds: 6, tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: "
      "NoSchedule}, {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, "
      "tolerationSeconds: 120}]"));
  EXPECT_EQ(Of(spec, "nvidia.com/gpu").size(), 1u);
  ASSERT_EQ(Of(spec, kUnreachable).size(), 1u) << spec.dump();
  EXPECT_EQ(Of(spec, kUnreachable)[0]["tolerationSeconds"], 120);
  ASSERT_EQ(Of(spec, kNotReady).size(), 1u);
  EXPECT_EQ(Of(spec, kNotReady)[0]["tolerationSeconds"], 6);
  // A toleration of every taint (no key, Exists) is the user's choice for both.
  const json all = PodSpec(Pipeline(", tolerations: [{operator: Exists}]"));
  EXPECT_EQ(all["tolerations"].size(), 1u) << all.dump();
}

TEST(PodPlacement, ATolerationOfAnotherEffectDoesNotCountForALostNode) {
  const json tolerations = ToleratingNodeLoss(
      json::parse(R"([{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                       "effect": "NoSchedule"}])"),
      4);
  std::vector<json> unreachable = Of({{"tolerations", tolerations}}, kUnreachable);
  ASSERT_EQ(unreachable.size(), 2u) << tolerations.dump();
  EXPECT_EQ(unreachable[1]["effect"], "NoExecute");
  EXPECT_EQ(unreachable[1]["tolerationSeconds"], 4);
  // Not a list: a list of the two.
  EXPECT_EQ(ToleratingNodeLoss(json("x"), 1).size(), 2u);
}

TEST(PodPlacement, ReplicasOfADeploymentSpreadOverTheNodesUnlessTheTemplateSaysOtherwise) {
  const model::Pipeline p = Pipeline("");
  const json d = BuildDeployment(p, {}, p.spec.tasks[0], p.spec.tasks[0].variants[0],
                                 p.spec.hardware_classes[0], 2, 4);
  const json& spread = d["spec"]["template"]["spec"]["topologySpreadConstraints"];
  ASSERT_EQ(spread.size(), 1u);
  EXPECT_EQ(spread[0]["topologyKey"], "kubernetes.io/hostname");
  EXPECT_EQ(spread[0]["whenUnsatisfiable"], "ScheduleAnyway");
  // It counts the Deployment's own pods, no other's.
  EXPECT_EQ(spread[0]["labelSelector"]["matchLabels"], d["spec"]["selector"]["matchLabels"]);

  model::Pipeline own = p;
  own.spec.tasks[0].variants[0].pod_template = model::PassThroughJson(json::parse(
      R"({"spec": {"topologySpreadConstraints": [{"maxSkew": 2, "topologyKey": "zone",
          "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}]}})"));
  const json mine = BuildDeployment(own, {}, own.spec.tasks[0], own.spec.tasks[0].variants[0],
                                    own.spec.hardware_classes[0], 2, 4);
  EXPECT_EQ(mine["spec"]["template"]["spec"]["topologySpreadConstraints"][0]["topologyKey"],
            "zone");
}

TEST(PodPlacement, ARouterOnALostNodeIsReplacedAfterASecondAndItsReplicasSpread) {
  const model::Pipeline p = Pipeline("");
  const json d = BuildRouterDeployment(p, {}, 2);
  const json& spec = d["spec"]["template"]["spec"];
  for (const char* key : {kUnreachable, kNotReady}) {
    ASSERT_EQ(Of(spec, key).size(), 1u) << spec.dump();
    EXPECT_EQ(Of(spec, key)[0]["tolerationSeconds"], 1);
  }
  EXPECT_EQ(spec["topologySpreadConstraints"][0]["labelSelector"]["matchLabels"],
            d["spec"]["selector"]["matchLabels"]);
}

}  // namespace
}  // namespace pipescale::api
