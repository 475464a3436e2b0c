// The pods a router may call: only its pipeline's Ready pods with an address, at the port they
// declare, weighted by what their plan says one replica serves; anything else is passed over.
#include "routing/endpoints.h"

#include <gtest/gtest.h>

#include <random>

#include "api/pipeline_parse.h"
#include "model/plan.h"
#include "support/mutate.h"
#include "support/parsed_pipeline.h"

namespace pipescale::routing {
namespace {

using nlohmann::json;

model::Pipeline Chain() {
  return testing::ParsedPipeline(R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: chain}
spec:
  hardwareClasses: [{name: gpu}, {name: cpu}]
  tasks:
    - name: detect
      next: [{task: classify}]
      variants:
        - name: small
          profiles:
            - {hardwareClass: gpu, latencyMs: {quadratic: {b: 2, c: 8}}}
            - {hardwareClass: cpu, latencyMs: {quadratic: {b: 10, c: 40}}}
    - {name: classify, variants: [{name: v, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {c: 5}}}]}]}
  paths: [{name: all, tasks: [detect, classify], sloMs: 200}]
)");
}

json Pod(const std::string& name, const std::string& task, const std::string& ip,
         const std::string& ready = "True") {
  return {{"metadata",
           {{"name", name},
            {"labels",
             {{"pipescale.io/pipeline", "chain"},
              {"pipescale.io/task", task},
              {"pipescale.io/variant", task == "detect" ? "small" : "v"},
              {"pipescale.io/hardware-class", "cpu"}}}}},
          {"spec", {{"containers", {{{"name", "model"}}}}}},
          {"status", {{"podIP", ip}, {"conditions", {{{"type", "Ready"}, {"status", ready}}}}}}};
}

TEST(Endpoints, OnlyReadyPodsOfThePipelineWithAnAddress) {
  json other = Pod("o", "detect", "127.0.0.9");
  other["metadata"]["labels"]["pipescale.io/pipeline"] = "another";
  json leaving = Pod("l", "detect", "127.0.0.8");
  leaving["metadata"]["deletionTimestamp"] = "2026-11-25T09:00:00Z";
  const auto e =
      ReadyEndpoints(Chain(), {Pod("b", "detect", "127.0.0.3"), Pod("a", "detect", "127.0.0.2"),
                               Pod("n", "detect", "127.0.0.4", "False"), Pod("p", "classify", ""),
                               other, leaving});
  ASSERT_EQ(e.size(), 1u);
  ASSERT_EQ(e.at("detect").size(), 2u);
  EXPECT_EQ(e.at("detect")[0].address, "127.0.0.2:8080");  // sorted, the default port
  EXPECT_EQ(e.at("detect")[1].name, "b");
  EXPECT_EQ(e.at("detect")[1].variant, "small");
}

TEST(Endpoints, ThePortNamedHttpElseTheFirstDeclared) {
  json pod = Pod("a", "detect", "10.0.0.1");
  pod["spec"]["containers"] = {
      {{"name", "sidecar"}, {"ports", {{{"name", "metrics"}, {"containerPort", 9090}}}}},
      {{"name", "model"}, {"ports", {{{"name", "http"}, {"containerPort", 8000}}}}}};
  EXPECT_EQ(ReadyEndpoints(Chain(), {pod}).at("detect")[0].address, "10.0.0.1:8000");
  pod["spec"]["containers"][1]["ports"][0]["name"] = "grpc";
  EXPECT_EQ(ReadyEndpoints(Chain(), {pod}).at("detect")[0].address, "10.0.0.1:9090");
}

// The node a pod runs on, which the router suspects with a pod of it that hung; "" before the
// pod is bound.
TEST(Endpoints, TheNodeIsThePodsSpecNodeName) {
  json bound = Pod("a", "detect", "10.0.0.1");
  bound["spec"]["nodeName"] = "node-1";
  json numbered = Pod("b", "detect", "10.0.0.2");
  numbered["spec"]["nodeName"] = 7;  // not a name: as not known
  const auto e = ReadyEndpoints(Chain(), {bound, numbered, Pod("c", "detect", "10.0.0.3")});
  ASSERT_EQ(e.at("detect").size(), 3u);
  EXPECT_EQ(e.at("detect")[0].node, "node-1");
  EXPECT_EQ(e.at("detect")[1].node, "");
  EXPECT_EQ(e.at("detect")[2].node, "");
}

// batching 4 on the CPU (d(4) = 80 ms) counts as 50 requests/s and one at batch 1 as 20.
TEST(Endpoints, WeightIsThePlannedThroughputOfOneReplica) {
  json batched = Pod("a", "detect", "10.0.0.1");
  batched["spec"]["containers"][0]["env"] = {{{"name", "MAX_BATCH_SIZE"}, {"value", "4"}}};
  const auto e = ReadyEndpoints(Chain(), {batched, Pod("b", "detect", "10.0.0.2")});
  EXPECT_DOUBLE_EQ(e.at("detect")[0].weight, 50);
  EXPECT_DOUBLE_EQ(e.at("detect")[1].weight, 20);
  json gpu = Pod("c", "detect", "10.0.0.3");
  gpu["metadata"]["labels"]["pipescale.io/hardware-class"] = "gpu";
  EXPECT_DOUBLE_EQ(ReadyEndpoints(Chain(), {gpu}).at("detect")[0].weight, 100);
  json unknown = Pod("d", "detect", "10.0.0.4");
  unknown["metadata"]["labels"]["pipescale.io/variant"] = "gone";
  EXPECT_DOUBLE_EQ(ReadyEndpoints(Chain(), {unknown}).at("detect")[0].weight, 1);
}

// A server that may grow its batches holds the most in its batch env and the plan's batch in
// model::kPlannedBatchEnv: the router weighs the pod at the plan's, whichever comes first.
TEST(Endpoints, APodIsWeighedAtThePlansBatchNotTheMostItsServerMayBatch) {
  json grown = Pod("a", "detect", "10.0.0.1");
  grown["spec"]["containers"][0]["env"] = {{{"name", "MAX_BATCH_SIZE"}, {"value", "8"}},
                                           {{"name", model::kPlannedBatchEnv}, {"value", "4"}}};
  const auto e = ReadyEndpoints(Chain(), {grown});
  EXPECT_EQ(e.at("detect")[0].batch, 4);
  EXPECT_DOUBLE_EQ(e.at("detect")[0].weight, 50);
  EXPECT_EQ(PlannedBatch(grown["spec"]["containers"], "MAX_BATCH_SIZE"), 4);
  std::swap(grown["spec"]["containers"][0]["env"][0], grown["spec"]["containers"][0]["env"][1]);
  EXPECT_EQ(PlannedBatch(grown["spec"]["containers"], "MAX_BATCH_SIZE"), 4);
  EXPECT_EQ(PlannedBatch(json::array({{{"env", {{{"name", "MAX_BATCH_SIZE"}, {"value", "8"}}}}}}),
                         "MAX_BATCH_SIZE"),
            8)
      << "without the planned one, the batch env's";
  EXPECT_EQ(PlannedBatch(json("x"), "MAX_BATCH_SIZE"), 1);
}

// A value that is not a batch size (a user's template, a hand edit) is read as if absent: the
// other env var's, else 1; never a number made of its first digits, never an overflow.
TEST(Endpoints, ABatchEnvThatIsNotABatchSizeIsPassedOver) {
  for (const std::string junk : {"", "x", "8x", " 8", "0", "-4", "99999999999", "1e3"}) {
    const json planned_junk =
        json::array({{{"env",
                       {{{"name", "MAX_BATCH_SIZE"}, {"value", "8"}},
                        {{"name", model::kPlannedBatchEnv}, {"value", junk}}}}}});
    EXPECT_EQ(PlannedBatch(planned_junk, "MAX_BATCH_SIZE"), 8) << junk;
    const json batch_junk =
        json::array({{{"env", {{{"name", "MAX_BATCH_SIZE"}, {"value", junk}}}}}});
    EXPECT_EQ(PlannedBatch(batch_junk, "MAX_BATCH_SIZE"), 1) << junk;
  }
}

// Pods come from outside: any shape is passed over or read as far as it makes sense, never a
// crash.
// A pod not Ready whose container has run and ended (restarted, or just crashed) is restarting;
// one not yet started, one leaving, a Ready one and another pipeline's are not; nothing
// malformed counts.
TEST(Endpoints, RestartingPodsAreTheNotReadyOnesThatRestarted) {
  const auto restarts = [](json pod, const json& count) {
    pod["status"]["containerStatuses"] = {{{"name", "model"}, {"restartCount", count}}};
    return pod;
  };
  json leaving = restarts(Pod("l", "detect", "10.0.0.4", "False"), 1);
  leaving["metadata"]["deletionTimestamp"] = "2026-12-07T09:00:00Z";
  json crashed = Pod("g", "classify", "10.0.0.8", "False");  // before its first restart
  crashed["status"]["containerStatuses"] = {
      {{"restartCount", 0}, {"state", {{"terminated", {{"exitCode", 137}}}}}}};
  json looping = restarts(Pod("h", "classify", "10.0.0.9", "False"), 2);  // crashed again
  looping["status"]["containerStatuses"][0]["state"] = {
      {"waiting", {{"reason", "CrashLoopBackOff"}, {"message", "back-off 10s restarting"}}}};
  json odd = restarts(Pod("i", "detect", "10.0.0.10", "False"), 1);
  odd["status"]["containerStatuses"][0]["state"] = {{"waiting", {{"reason", 7}}}};
  json other = restarts(Pod("o", "detect", "10.0.0.5", "False"), 1);
  other["metadata"]["labels"]["pipescale.io/pipeline"] = "another";
  const auto r = RestartingPods(
      Chain(), {restarts(Pod("a", "detect", "10.0.0.1", "False"), 2),
                restarts(Pod("b", "detect", "", "False"), 1),
                restarts(Pod("c", "classify", "10.0.0.2", "False"), 0),
                restarts(Pod("d", "classify", "10.0.0.3"), 3), leaving, other, crashed, looping,
                odd, restarts(Pod("e", "classify", "10.0.0.6", "False"), "1"),
                restarts(Pod("f", "classify", "10.0.0.7", "False"), json::array()), json(),
                json::array(), json{{"status", {{"containerStatuses", 5}}}}});
  EXPECT_EQ(r, (std::map<std::string, int>{{"classify", 1}, {"detect", 3}}));
}

// Started and awaiting readiness: Running, every container running, not Ready, not leaving.
// A pod still being scheduled or pulled, one with a container not yet (or no longer) running, a
// Ready one and a leaving one are not; the endpoints are built as the Ready ones are.
TEST(Endpoints, StartingPodsAreTheRunningOnesNotYetReady) {
  const auto running = [](json pod, const std::vector<json>& states) {
    pod["status"]["phase"] = "Running";
    pod["status"]["containerStatuses"] = json::array();
    for (const json& state : states) {
      pod["status"]["containerStatuses"].push_back({{"name", "model"}, {"state", state}});
    }
    return pod;
  };
  const json up = {{"running", {{"startedAt", "2026-12-07T09:00:00Z"}}}};
  const json waiting = {{"waiting", {{"reason", "ContainerCreating"}}}};
  json pending = Pod("p", "detect", "10.0.0.5", "False");
  pending["status"]["phase"] = "Pending";
  json leaving = running(Pod("l", "detect", "10.0.0.4", "False"), {up});
  leaving["metadata"]["deletionTimestamp"] = "2026-12-07T09:00:00Z";
  const std::vector<json> pods = {running(Pod("b", "detect", "10.0.0.2", "False"), {up}),
                                  running(Pod("a", "classify", "10.0.0.1", "False"), {up, up}),
                                  running(Pod("c", "classify", "10.0.0.3", "False"), {up, waiting}),
                                  running(Pod("r", "detect", "10.0.0.6"), {up}),
                                  running(Pod("n", "detect", "", "False"), {up}),
                                  running(Pod("e", "detect", "10.0.0.7", "False"), {}),
                                  pending,
                                  leaving};
  const auto e = StartingEndpoints(Chain(), pods);
  ASSERT_EQ(e.size(), 2U);
  ASSERT_EQ(e.at("detect").size(), 1U);
  EXPECT_EQ(e.at("detect")[0].address, "10.0.0.2:8080");
  EXPECT_EQ(e.at("detect")[0].variant, "small");
  ASSERT_EQ(e.at("classify").size(), 1U);
  EXPECT_EQ(e.at("classify")[0].name, "a");
  // No pod is both Ready and starting.
  for (const json& pod : pods) EXPECT_FALSE(PodReady(pod) && PodStarting(pod)) << pod.dump();
  EXPECT_FALSE(PodStarting(json::array()));
}

TEST(Endpoints, MalformedPodsArePassedOver) {
  json labels_wrong = Pod("a", "detect", "10.0.0.1");
  labels_wrong["metadata"]["labels"]["pipescale.io/task"] = 7;
  json status_wrong = Pod("b", "detect", "10.0.0.2");
  status_wrong["status"]["conditions"] = "Ready";
  json ports_wrong = Pod("c", "detect", "10.0.0.3");
  ports_wrong["spec"]["containers"] = {{{"ports", "http"}, {"env", 3}}, 5};
  const auto e = ReadyEndpoints(Chain(), {json(), json::array(), json{{"metadata", 1}},
                                          labels_wrong, status_wrong, ports_wrong});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e.at("detect")[0].address, "10.0.0.3:8080");
  for (const json& not_a_pod : {json(), json::array(), json{{"metadata", 1}}, status_wrong}) {
    EXPECT_FALSE(PodReady(not_a_pod)) << not_a_pod.dump();
  }
  EXPECT_TRUE(PodReady(Pod("r", "detect", "10.0.0.5")));
}

// Pods come from the apiserver, anything a writer put there: mutations of a pod list's text
// (bytes flipped, cut, duplicated) never crash either reader, every Ready endpoint has an
// address, and no pod is counted both Ready and restarting. (A task label the pipeline does not
// list is passed through: MakeTable leaves such pods out.)
TEST(Endpoints, FuzzedPodsNeverCrashTheReaders) {
  json restarted = Pod("r", "classify", "10.0.0.2", "False");
  restarted["spec"]["containers"][0]["ports"] = {{{"name", "http"}, {"containerPort", 9000}}};
  restarted["spec"]["containers"][0]["env"] = {{{"name", "PIPESCALE_BATCH_SIZE"}, {"value", "4"}}};
  restarted["status"]["containerStatuses"] = {
      {{"name", "model"},
       {"restartCount", 1},
       {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}}}}},
       {"lastState", {{"terminated", {{"exitCode", 137}}}}}}};
  const std::string seed = json::array({Pod("a", "detect", "10.0.0.1"), restarted}).dump();
  const model::Pipeline pipeline = Chain();
  std::mt19937 rng(48);
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    const json pods =
        json::parse(testing::Mutate(seed, rng, 6, [&] { return static_cast<char>(rng() % 256); }),
                    nullptr, false);
    if (pods.is_discarded() || !pods.is_array()) continue;
    ++parsed;
    const std::vector<json> list(pods.begin(), pods.end());
    const auto ready = ReadyEndpoints(pipeline, list);
    const auto restarting = RestartingPods(pipeline, list);
    for (const auto& [task, endpoints] : StartingEndpoints(pipeline, list)) {
      for (const PodEndpoint& e : endpoints) EXPECT_NE(e.address.find(':'), 0U) << e.address;
    }
    size_t counted = 0;
    for (const auto& [task, endpoints] : ready) {
      EXPECT_FALSE(task.empty());
      for (const PodEndpoint& e : endpoints) EXPECT_NE(e.address.find(':'), 0u) << e.address;
      counted += endpoints.size();
    }
    for (const auto& [task, n] : restarting) {
      EXPECT_FALSE(task.empty());
      EXPECT_GT(n, 0) << task;
      counted += static_cast<size_t>(n);
    }
    EXPECT_LE(counted, list.size()) << pods.dump();
  }
  EXPECT_GT(parsed, 1000);  // the mutations left many lists to read
}

}  // namespace
}  // namespace pipescale::routing
