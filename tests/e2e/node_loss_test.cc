// A whole node lost under load on the local cluster (issue 48): the chain's model pods run on
// two emulated nodes of one pool, each node its own agent, detect and classify at two replicas
// spread over them; one node loses power (its agent killed, every process of its pods with it,
// its Lease no longer renewed). The clients may lose at most what was in flight when it went (the
// router retries a call that found its pod gone on the other pod); the node lifecycle controller
// marks the node unreachable, its pods are evicted after their class's start-up and replaced on
// the other node. Then the node comes back and finishes what was deleted meanwhile.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "e2e/fault_fixture.h"
#include "integration/harness/events.h"
#include "integration/harness/node_pool.h"

namespace pipescale::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr int kLoadSeconds = 50;

// One node of the pool, as its own agent.
json OneNode() {
  return json::array({{{"name", "node"},
                       {"count", 1},
                       {"capacity", {{"cpu", "16"}, {"memory", "32Gi"}, {"pods", "110"}}}}});
}

// Whether the node `name` is Ready (status True) as the node lifecycle controller last wrote.
bool NodeReady(const kube::Client& client, const std::string& name) {
  auto node = client.Get(kube::ObjectPath(kube::kNodes, "", name));
  if (!node.ok()) return false;
  for (const json& c : (*node)["status"].value("conditions", json::array())) {
    if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
  }
  return false;
}

TEST_F(FaultTest, ALostNodeCostsAtMostWhatWasInFlightAndItsPodsAreReplacedElsewhere) {
  const std::string pool = "lost-" + ns_;
  NodePool lost(pool + "-a", OneNode(), {}, pool);
  NodePool kept(pool + "-b", OneNode(), {}, pool);
  const std::string lost_node = pool + "-a-node";
  ASSERT_TRUE(Eventually([&] { return kept.ReadyNodes() == 2; }, 30s, 200ms)) << lost.Log();
  // The class admitted to the pool only; classify kept at two replicas as detect is.
  std::string yaml = PipelineYaml(", startupSeconds: 1, nodeSelector: {pipescale.io/pool: " +
                                  pool + "}, tolerations: [{key: pipescale.io/pool, operator: " +
                                  "Equal, value: " + pool + ", effect: NoSchedule}]");
  const std::string classify = "    - name: classify\n";
  yaml.replace(yaml.find(classify), classify.size(), classify + "      minReplicas: 2\n");
  whole_.push_back("pipescale.io/task=classify");
  auto op = StartPipeline(false, yaml);
  ASSERT_TRUE(op);
  // Spread: each task has a pod on the node to be lost and one on the other.
  std::vector<std::string> on_lost;
  for (const json& pod : Pods("pipescale.io/pipeline=faults")) {
    if (pod["spec"].value("nodeName", "") == lost_node) {
      on_lost.push_back(pod["status"].value("podIP", ""));
    }
  }
  ASSERT_EQ(on_lost.size(), 2u) << Pods("pipescale.io/pipeline=faults").dump();

  const std::string requests = dir_ + "/requests.csv";
  Process load = StartLoad(kLoadSeconds, requests);
  ASSERT_TRUE(LoadStarted(load)) << load.Log();
  const double started_ms = UnixMs();
  ASSERT_TRUE(Eventually([&] { return UnixMs() >= started_ms + 8000; }, 20s, 100ms));

  const double at_ms = UnixMs();
  lost_node_ = lost_node;
  ASSERT_TRUE(lost.Lose());
  // Its pods' processes die with the agent (their parent-death signal).
  ASSERT_TRUE(Eventually(
      [&] {
        return std::all_of(on_lost.begin(), on_lost.end(),
                           [](const std::string& ip) { return ListenerPid(ip).empty(); });
      },
      10s, 5ms));
  const double gone_ms = UnixMs();
  ASSERT_TRUE(Eventually([&] { return !NodeReady(*client_, lost_node); }, 40s, 200ms))
      << "the node lifecycle controller did not mark the node lost";
  const double unready_ms = UnixMs();
  ASSERT_TRUE(Eventually([&] { return Whole(); }, 60s, 200ms))
      << "the lost node's pods were not replaced: " << Pods("pipescale.io/pipeline").dump()
      << EventsOf(*client_, ns_);
  const double whole_ms = UnixMs();
  for (const json& pod : Pods("pipescale.io/pipeline=faults")) {
    if (routing::PodReady(pod)) {
      EXPECT_NE(pod["spec"].value("nodeName", ""), lost_node);
    }
  }
  ASSERT_EQ(load.Stop(0, 150s), 0) << load.Log();
  EXPECT_LT(whole_ms, started_ms + 1000.0 * kLoadSeconds) << "whole again after the load ended";

  // Back: the agent removes the pods evicted while it was away; the node is Ready again.
  lost.Return();
  EXPECT_TRUE(Eventually([&] { return NodeReady(*client_, lost_node); }, 30s, 200ms));
  EXPECT_TRUE(Eventually(
      [&] {
        for (const json& pod : Pods("pipescale.io/pipeline=faults")) {
          if (pod["metadata"].contains("deletionTimestamp")) return false;
        }
        return true;
      },
      30s, 200ms))
      << Pods("pipescale.io/pipeline=faults").dump();

  // Each request not answered 200 was in flight when the node went.
  const std::vector<Request> all = ReadRequests(requests);
  EXPECT_GT(all.size(), static_cast<size_t>(0.9 * kRate * kLoadSeconds));
  int lost_requests = 0, in_flight = 0;
  for (const Request& r : all) {
    const bool spans = r.sent_ms <= gone_ms && r.done_ms >= at_ms;
    in_flight += spans ? 1 : 0;
    if (r.code == 200) continue;
    ++lost_requests;
    if (!spans) {
      ADD_FAILURE() << "request sent " << (r.sent_ms - started_ms) / 1000 << " s into the load to "
                    << r.router << " answered " << r.code << " (" << (r.done_ms - r.sent_ms)
                    << " ms)";
    }
  }
  std::printf("a node lost (its agent and pods killed) %.1f s into the load: %zu requests, %d lost, "
              "%d in flight in the pipeline at that instant; the node unreachable %.1f s after, "
              "its pods replaced and Ready %.1f s after that (%.1f s in all)\n",
              (at_ms - started_ms) / 1000, all.size(), lost_requests, in_flight,
              (unready_ms - at_ms) / 1000, (whole_ms - unready_ms) / 1000,
              (whole_ms - at_ms) / 1000);
  EXPECT_EQ(op->Stop(SIGTERM, 10s), 0) << op->Log();
}

}  // namespace
}  // namespace pipescale::testing
