// The operator's pods on a lost node: model replicas wait their class's start-up from the node's
// silence before they are replaced, routers their own second, a user's toleration of the taint
// stands, and replicas of one Deployment spread over the nodes; a router stopped is given the time
// to finish what it holds.
#include "api/pod_placement.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "api/deployment.h"
#include "api/router_objects.h"
#include "support/parsed_pipeline.h"
#include "support/pipelines.h"

namespace pipescale::api {
namespace {

using nlohmann::json;

constexpr const char* kUnreachable = "node.kubernetes.io/unreachable";
constexpr const char* kNotReady = "node.kubernetes.io/not-ready";

// The shared one-task pipeline with a router; `class_fields` go into its one hardware class.
model::Pipeline Pipeline(const json& class_fields = json::object()) {
  json doc = testing::OneTaskPipeline("traffic", "ns");
  doc["spec"]["router"] = json::object();
  doc["spec"]["hardwareClasses"][0].update(class_fields);
  return testing::ParsedPipeline(doc.dump());
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

// Counted from the node's silence: one reporting itself not ready is, at once; one marked
// unreachable has been silent Kubernetes' default grace (40 s) already.
TEST(PodPlacement, AModelReplicaOnALostNodeWaitsItsClassesStartUpThenIsReplaced) {
  struct Case {
    json startup;
    int not_ready, unreachable;
  };
  const std::vector<Case> cases = {{json::object(), 0, 0},
                                   {json::parse(R"({"startupSeconds": 6})"), 6, 0},
                                   {json::parse(R"({"startupSeconds": 2.5})"), 3, 0},
                                   {json::parse(R"({"startupSeconds": 100})"), 100, 60}};
  for (const Case& c : cases) {
    const json spec = PodSpec(Pipeline(c.startup));
    for (const auto& [key, seconds] :
         {std::pair{kNotReady, c.not_ready}, std::pair{kUnreachable, c.unreachable}}) {
      const std::vector<json> found = Of(spec, key);
      ASSERT_EQ(found.size(), 1U) << key << " " << spec.dump();
      EXPECT_EQ(found[0]["effect"], "NoExecute");
      EXPECT_EQ(found[0]["operator"], "Exists");
      EXPECT_EQ(found[0]["tolerationSeconds"], seconds) << key << " " << c.startup.dump();
    }
  }
}

TEST(PodPlacement, TheClassesOwnTolerationsStayAndAUsersChoiceForALostNodeStands) {
  const json spec = PodSpec(Pipeline(json::parse(R"({"startupSeconds": 6, "tolerations": [
      {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
      {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
       "tolerationSeconds": 120}]})")));
  EXPECT_EQ(Of(spec, "nvidia.com/gpu").size(), 1U);
  ASSERT_EQ(Of(spec, kUnreachable).size(), 1U) << spec.dump();
  EXPECT_EQ(Of(spec, kUnreachable)[0]["tolerationSeconds"], 120);
  ASSERT_EQ(Of(spec, kNotReady).size(), 1U);
  EXPECT_EQ(Of(spec, kNotReady)[0]["tolerationSeconds"], 6);
  // A toleration of every taint (no key, Exists) is the user's choice for both.
  const json all = PodSpec(Pipeline(json::parse(R"({"tolerations": [{"operator": "Exists"}]})")));
  EXPECT_EQ(all["tolerations"].size(), 1U) << all.dump();
}

TEST(PodPlacement, ATolerationOfAnotherEffectDoesNotCountForALostNode) {
  const json tolerations = ToleratingNodeLoss(
      json::parse(R"([{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                       "effect": "NoSchedule"}])"),
      45);
  std::vector<json> unreachable = Of({{"tolerations", tolerations}}, kUnreachable);
  ASSERT_EQ(unreachable.size(), 2U) << tolerations.dump();
  EXPECT_EQ(unreachable[1]["effect"], "NoExecute");
  EXPECT_EQ(unreachable[1]["tolerationSeconds"], 5);
  // Not a list: a list of the two.
  EXPECT_EQ(ToleratingNodeLoss(json("x"), 1).size(), 2U);
}

TEST(PodPlacement, ReplicasOfADeploymentSpreadOverTheNodesUnlessTheTemplateSaysOtherwise) {
  const model::Pipeline p = Pipeline();
  const json d = BuildDeployment(p, {}, p.spec.tasks[0], p.spec.tasks[0].variants[0],
                                 p.spec.hardware_classes[0], 2, 4);
  const json& spread = d["spec"]["template"]["spec"]["topologySpreadConstraints"];
  ASSERT_EQ(spread.size(), 1U);
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

TEST(PodPlacement, ARouterOnALostNodeIsReplacedAfterASecondOfSilenceAndItsReplicasSpread) {
  const model::Pipeline p = Pipeline();
  const json d = BuildRouterDeployment(p, {}, 2);
  const json& spec = d["spec"]["template"]["spec"];
  for (const auto& [key, seconds] : {std::pair{kNotReady, 1}, std::pair{kUnreachable, 0}}) {
    ASSERT_EQ(Of(spec, key).size(), 1U) << spec.dump();
    EXPECT_EQ(Of(spec, key)[0]["tolerationSeconds"], seconds) << key;
  }
  EXPECT_EQ(spec["topologySpreadConstraints"][0]["labelSelector"]["matchLabels"],
            d["spec"]["selector"]["matchLabels"]);
}

// A router told to stop finishes what it has, a request held through a wake or a restart
// included (held up to its path's ColdHoldMs): its pod's grace period covers the drain and the
// longest hold, never under Kubernetes' default 30 s, and not much past them (a router that
// hangs is killed then).
TEST(PodPlacement, ARoutersGracePeriodCoversItsDrainAndTheLongestHold) {
  const auto grace = [](const model::Pipeline& p) {
    return BuildRouterDeployment(p, {},
                                 2)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        .get<int>();
  };
  EXPECT_EQ(model::RouterFinishSeconds(0), 20);
  const model::Pipeline quick = Pipeline();
  ASSERT_EQ(quick.spec.paths.size(), 1U);
  EXPECT_GE(grace(quick), 30);
  EXPECT_GE(grace(quick), model::kRouterDrainSeconds + quick.ColdHoldMs(0) / 1000);

  const model::Pipeline slow = Pipeline(json::parse(R"({"startupSeconds": 120})"));
  const double hold_s = slow.ColdHoldMs(0) / 1000;
  ASSERT_GE(hold_s, 150);
  EXPECT_GE(slow.RouterFinishSeconds(), hold_s);
  EXPECT_GE(grace(slow), model::kRouterDrainSeconds + hold_s);
  EXPECT_LE(grace(slow), model::kRouterDrainSeconds + hold_s + 10);
}

}  // namespace
}  // namespace pipescale::api
