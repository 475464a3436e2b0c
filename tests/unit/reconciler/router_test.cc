// The router a pipeline asks for: created whole, sized from the measured load, held when the
// load is unknown, and left alone once it is as decided (a second reconcile writes nothing).
#include "reconciler/router.h"

#include <gtest/gtest.h>

#include "api/pipeline_parse.h"
#include "api/router_objects.h"
#include "support/pipelines.h"

namespace pipescale::reconciler {
namespace {

using nlohmann::json;

model::Pipeline WithRouter(const std::string& router =
                               "{minReplicas: 1, maxReplicas: 4, "
                               "requestsPerSecondPerReplica: 100}") {
  auto parsed = api::ParsePipeline(R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: chain, namespace: apps}
spec:
  router: )" + router + R"(
  hardwareClasses: [{name: cpu}]
  tasks:
    - {name: a, variants: [{name: v, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {c: 5}}}]}]}
  paths: [{name: p, tasks: [a], sloMs: 100}]
)");
  EXPECT_TRUE(parsed.pipeline) << (parsed.errors.empty() ? "" : parsed.errors[0].ToString());
  return *parsed.pipeline;
}

// The router's objects as the apiserver holds them.
struct Stored {
  std::optional<json> service_account, role_binding, deployment, service, budget;
  std::optional<std::string> budget_api;  // the PodDisruptionBudget version the cluster serves

  // As the operator reads them.
  RouterObjects Read() const {
    return {
        .service_account = service_account.has_value(),
        .role_binding = role_binding.has_value(),
        .service = service.has_value(),
        .disruption_budget = budget.has_value(),
        .deployment = deployment ? std::optional(api::ReadDeployment(*deployment)) : std::nullopt,
        .disruption_budget_api = budget_api};
  }
};

// What the apiserver would hold after the writes: each created object as sent, each patch
// merged.
Stored Applied(const std::vector<ObjectWrite>& writes, Stored current = {}) {
  for (const ObjectWrite& w : writes) {
    std::optional<json>* slot = w.type.plural == "serviceaccounts"        ? &current.service_account
                                : w.type.plural == "rolebindings"         ? &current.role_binding
                                : w.type.plural == "deployments"          ? &current.deployment
                                : w.type.plural == "poddisruptionbudgets" ? &current.budget
                                                                          : &current.service;
    if (w.create) {
      *slot = w.body;
    } else {
      (*slot)->merge_patch(w.body);
    }
  }
  return current;
}

TEST(RouterReplicas, FollowTheRateWithinBoundsAndHoldWithoutIt) {
  const model::RouterSpec spec = *WithRouter().spec.router;
  EXPECT_EQ(RouterReplicas(spec, 0.0, 3), 1);           // no load: the minimum
  EXPECT_EQ(RouterReplicas(spec, 250.0, 1), 3);         // ceil(250 / 100)
  EXPECT_EQ(RouterReplicas(spec, 9000.0, 1), 4);        // the maximum
  EXPECT_EQ(RouterReplicas(spec, std::nullopt, 3), 3);  // unknown load: what runs
  EXPECT_EQ(RouterReplicas(spec, std::nullopt, std::nullopt), 1);
  // Property: more load never means fewer replicas.
  int last = 0;
  for (double rps = 0; rps < 1000; rps += 7) {
    const int n = RouterReplicas(spec, rps, 2);
    EXPECT_GE(n, last);
    last = n;
  }
}

TEST(RouterWrites, NothingWithoutSpecRouter) {
  model::Pipeline p = WithRouter();
  p.spec.router.reset();
  EXPECT_TRUE(RouterWrites(p, "uid", "role", {}, 50.0).empty());
  EXPECT_FALSE(RouterPipelineWrite(p, "uid", std::nullopt, "{}"));
}

TEST(RouterWrites, CreatesEverythingOnceThenWritesNothing) {
  const model::Pipeline p = WithRouter();
  const auto first = RouterWrites(p, "uid-1", "pipescale-router", {}, 250.0);
  ASSERT_EQ(first.size(), 4u);
  for (const ObjectWrite& w : first) {
    EXPECT_TRUE(w.create);
    EXPECT_EQ(w.name, "chain-router");
    EXPECT_EQ(w.body["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  }
  const Stored now = Applied(first);
  EXPECT_EQ((*now.deployment)["spec"]["replicas"], 3);
  EXPECT_EQ((*now.role_binding)["roleRef"]["name"], "pipescale-router");
  EXPECT_EQ((*now.deployment)["spec"]["template"]["spec"]["serviceAccountName"], "chain-router");
  EXPECT_FALSE((*now.deployment)["spec"]["template"]["spec"].contains("priorityClassName"));
  EXPECT_TRUE(RouterWrites(p, "uid-1", "pipescale-router", now.Read(), 250.0).empty());
  // The pipeline's priority is the router's too: the request path goes before what it serves.
  model::Pipeline online = p;
  online.spec.priority_class_name = "online";
  const Stored prioritized = Applied(RouterWrites(online, "uid-1", "pipescale-router", {}, 250.0));
  EXPECT_EQ((*prioritized.deployment)["spec"]["template"]["spec"]["priorityClassName"], "online");
  EXPECT_TRUE(RouterWrites(p, "uid-1", "pipescale-router", now.Read(), std::nullopt).empty());
}

// The replicas spread over the nodes, and a budget that lets a drain take one at a time, at the
// version the cluster serves: a router replica that dies or is drained leaves another serving.
// Two by default; a maxReplicas of 1 alone caps the default instead of clashing with it.
TEST(RouterWrites, ReplicasSpreadUnderADisruptionBudget) {
  const model::Pipeline p = WithRouter("{}");
  EXPECT_EQ(p.spec.router->min_replicas, 2);
  EXPECT_EQ(WithRouter("{maxReplicas: 1}").spec.router->min_replicas, 1);
  for (const std::string version : {"policy/v1", "policy/v1beta1"}) {
    const Stored now = Applied(RouterWrites(p, "u", "r", Stored{.budget_api = version}.Read(), 0.0),
                               Stored{.budget_api = version});
    ASSERT_TRUE(now.budget) << version;
    EXPECT_EQ((*now.budget)["apiVersion"], version);
    EXPECT_EQ((*now.budget)["spec"]["maxUnavailable"], 1);
    const json pod = (*now.deployment)["spec"]["template"];
    EXPECT_EQ((*now.deployment)["spec"]["replicas"], 2);
    // Both select the router's pods and nothing else.
    for (const json& selector :
         {(*now.budget)["spec"]["selector"]["matchLabels"],
          pod["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchLabels"]}) {
      for (const auto& [key, value] : selector.items()) {
        EXPECT_EQ(pod["metadata"]["labels"].value(key, ""), value) << key;
      }
      EXPECT_EQ(selector, (*now.deployment)["spec"]["selector"]["matchLabels"]);
    }
    EXPECT_EQ(pod["spec"]["topologySpreadConstraints"][0]["whenUnsatisfiable"], "ScheduleAnyway");
    // The replicas share their counts at the pods over UDP on the port they serve HTTP on.
    std::map<std::string, json> ports;
    for (const json& port : pod["spec"]["containers"][0]["ports"]) ports[port["name"]] = port;
    EXPECT_EQ(ports["peers"]["protocol"], "UDP");
    EXPECT_EQ(ports["peers"]["containerPort"], ports["http"]["containerPort"]);
    EXPECT_TRUE(RouterWrites(p, "u", "r", now.Read(), 0.0).empty());
  }
  // A cluster that serves no PodDisruptionBudget gets the rest.
  const auto none = RouterWrites(p, "u", "r", {}, 0.0);
  EXPECT_FALSE(Applied(none).budget);
  EXPECT_EQ(none.size(), 4u);
}

TEST(RouterWrites, ResizesAndUpdatesOnlyTheDeployment) {
  const Stored now = Applied(RouterWrites(WithRouter(), "u", "r", {}, 50.0));
  const auto more = RouterWrites(WithRouter(), "u", "r", now.Read(), 350.0);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_FALSE(more[0].create);
  EXPECT_EQ(Applied(more, now).deployment->at("spec")["replicas"], 4);
  // A new image in the spec rolls the router; the replicas stay as measured.
  const auto image =
      RouterWrites(WithRouter("{image: example/router:2}"), "u", "r", now.Read(), 50.0);
  ASSERT_EQ(image.size(), 1u);
  const json d = *Applied(image, now).deployment;
  EXPECT_EQ(d["spec"]["template"]["spec"]["containers"][0]["image"], "example/router:2");
  EXPECT_EQ(d["spec"]["template"]["spec"]["serviceAccountName"], "chain-router");
  // So does a new body limit, which the router reads from its flags (default 4 MiB).
  const auto args = [](const json& deployment) {
    return deployment["spec"]["template"]["spec"]["containers"][0]["args"];
  };
  EXPECT_NE(args(*now.deployment).dump().find(R"("--max-body-bytes","4194304")"),
            std::string::npos);
  const auto limit =
      RouterWrites(WithRouter("{maxBodyBytes: 8388608}"), "u", "r", now.Read(), 50.0);
  ASSERT_EQ(limit.size(), 1u);
  EXPECT_NE(args(*Applied(limit, now).deployment).dump().find(R"("--max-body-bytes","8388608")"),
            std::string::npos);
}

TEST(RouterPipelineWrite, WritesTheGraphOnlyWhenItChanged) {
  const model::Pipeline p = WithRouter();
  const auto create = RouterPipelineWrite(p, "u", std::nullopt, "{\"spec\":1}");
  ASSERT_TRUE(create);
  EXPECT_TRUE(create->create);
  EXPECT_EQ(create->body["data"][api::kPipelineKey], "{\"spec\":1}");
  json stored = create->body;
  stored["data"]["routing.json"] = "{}";  // the optimizer's part does not matter here
  const api::ConfigMapView current = api::ReadConfigMap(stored);
  EXPECT_FALSE(RouterPipelineWrite(p, "u", current, "{\"spec\":1}"));
  const auto patch = RouterPipelineWrite(p, "u", current, "{\"spec\":2}");
  ASSERT_TRUE(patch);
  EXPECT_FALSE(patch->create);
  EXPECT_EQ(patch->body, (json{{"data", {{api::kPipelineKey, "{\"spec\":2}"}}}}));
}

// The graph the router reads parses back into the pipeline the operator planned.
TEST(RouterPipelineWrite, TheRouterReadsThePipelineBack) {
  json object = testing::OneTaskPipeline("x", "n");
  object["metadata"]["uid"] = "u";
  object["status"] = {{"plan", "ignored"}};
  auto parsed = api::ParsePipeline(api::PipelineForRouter(object));
  ASSERT_TRUE(parsed.pipeline) << parsed.errors[0].ToString();
  EXPECT_EQ(parsed.pipeline->name, "x");
  EXPECT_EQ(parsed.pipeline->namespace_name, "n");
  EXPECT_EQ(parsed.pipeline->spec.paths[0].slo_ms, 100);
}

}  // namespace
}  // namespace pipescale::reconciler
