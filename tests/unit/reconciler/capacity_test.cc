#include "reconciler/capacity.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "optimizer/registry.h"
#include "support/cluster_objects.h"

namespace pipescale::reconciler {
namespace {

using nlohmann::json;
using testing::Node;
using testing::Pipeline;
using testing::Pod;
using testing::PriorityClass;
using testing::WithPriority;

TEST(Capacity, CountsTheRoomOfTheNodesAClassAdmits) {
  const std::vector<json> nodes = {Node("gpu-1", 4, 48, true), Node("gpu-2", 4, 48, true),
                                   Node("cpu-1", 0, 16, false)};
  const std::vector<json> pods = {Pod("gpu-1", 1, "1", "shop"), Pod("gpu-1", 1, "1", "shop"),
                                  Pod("gpu-1", 1, "1", "shop"), Pod("gpu-2", 2, "1", "")};
  const ClusterCapacity c = ComputeCapacity(Pipeline(), nodes, pods);
  const ClassCapacity* gpu = c.Find("gpu");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->nodes, 2);
  EXPECT_EQ(gpu->placeable, 1 + 2);  // a GPU left on gpu-1, two on gpu-2
  EXPECT_EQ(gpu->scheduled, 3);
  EXPECT_EQ(gpu->Limit(), 6);
  // The CPU class does not tolerate the GPU taint: only cpu-1, 16 cores for 2-core replicas.
  const ClassCapacity* cpu = c.Find("cpu");
  EXPECT_EQ(cpu->nodes, 1);
  EXPECT_EQ(cpu->placeable, 8);
  EXPECT_TRUE(c.unschedulable.empty());
}

TEST(Capacity, SaysWhatRanOutAndWhoWaits) {
  const std::vector<json> nodes = {Node("gpu-1", 1, 48, true)};
  json waiting = Pod("", 1, "1", "shop");
  waiting["status"]["conditions"] = {{{"type", "PodScheduled"},
                                      {"status", "False"},
                                      {"reason", "Unschedulable"},
                                      {"message",
                                       "0/1 nodes are available: 1 Insufficient "
                                       "nvidia.com/gpu."}}};
  const ClusterCapacity c =
      ComputeCapacity(Pipeline(), nodes, {Pod("gpu-1", 1, "1", "shop"), waiting, waiting});
  EXPECT_EQ(c.Find("gpu")->placeable, 0);
  EXPECT_EQ(c.Find("gpu")->full_reason, "no room left for nvidia.com/gpu");
  EXPECT_EQ(c.Find("cpu")->full_reason,
            "no Ready node matches the class's nodeSelector and tolerations");
  ASSERT_EQ(c.unschedulable.size(), 1u);
  EXPECT_EQ(c.unschedulable[0].deployment, "shop-detect-v-gpu");
  EXPECT_EQ(c.unschedulable[0].pods, 2);
  EXPECT_NE(c.unschedulable[0].message.find("Insufficient nvidia.com/gpu"), std::string::npos);
}

TEST(Capacity, IgnoresUnreadyCordonedNodesAndFinishedPods) {
  json cordoned = Node("gpu-2", 4, 48, true);
  cordoned["spec"]["unschedulable"] = true;
  json done = Pod("gpu-1", 4, "1", "");
  done["status"]["phase"] = "Succeeded";
  const ClusterCapacity c = ComputeCapacity(
      Pipeline(), {Node("gpu-1", 4, 48, true), cordoned, Node("gpu-3", 4, 48, true, false)},
      {done});
  EXPECT_EQ(c.Find("gpu")->nodes, 1);
  EXPECT_EQ(c.Find("gpu")->placeable, 4);
}

// Property, against placing replicas one by one on generated clusters: the count is what fits
// when each node is filled until it can take no more, and adding a pod never adds room.
TEST(Capacity, MatchesPlacingOneReplicaAtATime) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<json> nodes, pods;
    std::vector<std::pair<int, int>> free;  // gpus, cores per node
    const int n = 1 + static_cast<int>(rng() % 5);
    for (int i = 0; i < n; ++i) {
      const int gpus = static_cast<int>(rng() % 5), cpus = 1 + static_cast<int>(rng() % 16);
      nodes.push_back(Node("n" + std::to_string(i), gpus, cpus, false));
      int used_gpus = 0, used_cpus = 0;
      for (int k = static_cast<int>(rng() % 4); k > 0; --k) {
        const int g = static_cast<int>(rng() % 2), c = static_cast<int>(rng() % 3);
        pods.push_back(Pod("n" + std::to_string(i), g, std::to_string(c), ""));
        used_gpus += g;
        used_cpus += c;
      }
      free.emplace_back(gpus - used_gpus, cpus - used_cpus);
    }
    int placed = 0;  // the CPU class: 2 cores each; every node admits it (no taints)
    for (auto [g, c] : free) {
      while (c >= 2) c -= 2, ++placed;
    }
    const ClusterCapacity c = ComputeCapacity(Pipeline(), nodes, pods);
    EXPECT_EQ(c.Find("cpu")->placeable, placed) << "round " << round;
    pods.push_back(Pod("n0", 0, "1", ""));
    EXPECT_LE(ComputeCapacity(Pipeline(), nodes, pods).Find("cpu")->placeable, placed);
  }
}

// Another's pods of a lower priority than the pipeline's are room the scheduler preempts for
// it (counted as preemptible); of the same or a higher priority they are not. A pipeline that
// names no class has the globalDefault's priority, else 0.
TEST(Capacity, PodsOfALowerPriorityAreRoomTheSchedulerPreempts) {
  const std::vector<json> nodes = {Node("gpu-1", 4, 48, true)};
  const std::vector<json> pods = {WithPriority(Pod("gpu-1", 1, "1", ""), 100),
                                  WithPriority(Pod("gpu-1", 1, "1", ""), 100),
                                  WithPriority(Pod("gpu-1", 1, "1", ""), 5000)};
  const std::vector<json> classes = {PriorityClass("batch", 100), PriorityClass("online", 1000),
                                     PriorityClass("critical", 5000)};
  const auto gpu = [&](const std::string& name, const std::vector<json>& with) {
    model::Pipeline p = Pipeline();
    p.spec.priority_class_name = name;
    return *ComputeCapacity(p, nodes, pods, with).Find("gpu");
  };
  EXPECT_EQ(gpu("online", classes).placeable, 3);  // the free GPU and the two batch pods'
  EXPECT_EQ(gpu("online", classes).preemptible, 2);
  EXPECT_EQ(gpu("batch", classes).placeable, 1) << "same priority: not preempted";
  EXPECT_EQ(gpu("batch", classes).preemptible, 0);
  EXPECT_EQ(gpu("critical", classes).placeable, 3) << "its own priority's pod is not room";
  EXPECT_EQ(gpu("", classes).placeable, 1) << "no class and no globalDefault: priority 0";
  EXPECT_EQ(gpu("unknown", classes).placeable, 1) << "a class not in the cluster: priority 0";
  std::vector<json> with_default = classes;
  with_default.push_back(PriorityClass("default", 1000, true));
  EXPECT_EQ(gpu("", with_default).placeable, 3) << "the globalDefault's priority";
}

// A full class whose nodes run pods of a higher priority names them by pipeline (router pods by
// theirs, the rest as other pods); pods of the same priority, or a class with room, yield nothing.
TEST(Capacity, AFullClassNamesThePodsOfAHigherPriorityOnItsNodes) {
  const std::vector<json> nodes = {Node("gpu-1", 2, 48, true), Node("cpu-1", 0, 16, false)};
  json online = WithPriority(Pod("gpu-1", 1, "1", ""), 1000);
  online["metadata"]["namespace"] = "team-a";
  online["metadata"]["labels"]["pipescale.io/pipeline"] = "online";
  const std::vector<json> pods = {online, WithPriority(Pod("gpu-1", 1, "1", ""), 1000),
                                  WithPriority(Pod("cpu-1", 0, "1", ""), 1000)};
  const std::vector<json> classes = {PriorityClass("batch", 100), PriorityClass("online", 1000)};
  model::Pipeline batch = Pipeline();
  batch.spec.priority_class_name = "batch";
  const ClusterCapacity c = ComputeCapacity(batch, nodes, pods, classes);
  ASSERT_EQ(c.yielded.size(), 1u) << "the cpu class has room: nothing yielded there";
  EXPECT_EQ(c.yielded[0].hardware_class, "gpu");
  EXPECT_EQ(c.yielded[0].holders,
            (std::map<std::string, int>{{"team-a/online", 1}, {"other pods", 1}}));
  model::Pipeline same = Pipeline();
  same.spec.priority_class_name = "online";
  EXPECT_TRUE(ComputeCapacity(same, nodes, pods, classes).yielded.empty())
      << "the same priority: contention, not yielding";
}

// Property, against counting each node's free room at a priority by hand on generated clusters:
// placeable is what fits once the pods below the pipeline's priority are gone, preemptible what
// of it fits only then, and neither placeable nor the limit ever falls as the priority rises.
TEST(Capacity, RoomGrowsWithThePriorityAndIsWhatFitsWithoutTheLowerPods) {
  std::mt19937 rng(3);
  const std::vector<int> values = {0, 100, 1000, 5000};
  std::vector<json> classes;
  for (int v : values) classes.push_back(PriorityClass("p" + std::to_string(v), v));
  for (int round = 0; round < 200; ++round) {
    std::vector<json> nodes, pods;
    std::vector<int> cores;
    std::vector<std::vector<std::pair<int, int>>> on;  // by node: (cores, priority) of its pods
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) {
      cores.push_back(1 + static_cast<int>(rng() % 16));
      nodes.push_back(Node("n" + std::to_string(i), 0, cores.back(), false));
      on.emplace_back();
      for (int k = static_cast<int>(rng() % 5); k > 0; --k) {
        const int c = static_cast<int>(rng() % 4), priority = values[rng() % values.size()];
        pods.push_back(
            WithPriority(Pod("n" + std::to_string(i), 0, std::to_string(c), ""), priority));
        on.back().emplace_back(c, priority);
      }
    }
    int last = -1;
    for (int v : values) {
      int placeable = 0, now = 0;  // the CPU class: 2 cores a replica
      for (int i = 0; i < n; ++i) {
        int free = cores[i], free_now = cores[i];
        for (auto [c, priority] : on[i]) {
          free_now -= c;
          if (priority >= v) free -= c;
        }
        placeable += std::max(0, free) / 2;
        now += std::max(0, free_now) / 2;
      }
      model::Pipeline p = Pipeline();
      p.spec.priority_class_name = "p" + std::to_string(v);
      const ClassCapacity cpu = *ComputeCapacity(p, nodes, pods, classes).Find("cpu");
      EXPECT_EQ(cpu.placeable, placeable) << "round " << round << ", priority " << v;
      EXPECT_EQ(cpu.preemptible, placeable - now) << "round " << round << ", priority " << v;
      EXPECT_GE(cpu.placeable, last) << "round " << round << ", priority " << v;
      last = cpu.placeable;
    }
  }
}

// Property: a view kept from a random stream of events (pods added, rebound, finished,
// re-labelled and deleted; nodes added, cordoned and deleted; in any order, a pod before its
// node) counts what a view built from the final objects counts, after every event. The
// incremental count may never drift from the full one.
TEST(Capacity, AViewKeptFromEventsCountsWhatTheFinalObjectsDo) {
  std::mt19937 rng(11);
  const model::Pipeline pipeline = Pipeline();
  for (int round = 0; round < 50; ++round) {
    ClusterView view;
    std::map<std::string, json> nodes, pods;
    for (int step = 0; step < 60; ++step) {
      const int what = static_cast<int>(rng() % 10);
      const std::string node = "n" + std::to_string(rng() % 4);
      if (what < 2) {  // a node appears or changes
        json n = Node(node, static_cast<int>(rng() % 4), 4 + static_cast<int>(rng() % 12),
                      rng() % 2 == 0, rng() % 5 != 0);
        if (rng() % 4 == 0) n["spec"]["unschedulable"] = true;
        nodes[node] = n;
        view.SetNode(node, ReadNode(n));
      } else if (what == 2) {  // a node goes
        nodes.erase(node);
        view.RemoveNode(node);
      } else {
        const std::string key = "ns/p" + std::to_string(rng() % 12);
        if (what == 3) {  // a pod goes
          pods.erase(key);
          view.RemovePod(key);
          continue;
        }
        json pod =
            Pod(rng() % 3 == 0 ? "" : node, static_cast<int>(rng() % 2), std::to_string(rng() % 3),
                rng() % 2 == 0 ? "shop" : "", rng() % 2 ? "gpu" : "cpu");
        if (rng() % 6 == 0) pod["status"]["phase"] = "Succeeded";
        if (!pod["spec"].contains("nodeName") && rng() % 2 == 0) {
          pod["status"]["conditions"] = {{{"type", "PodScheduled"},
                                          {"status", "False"},
                                          {"reason", "Unschedulable"},
                                          {"message", "0/4 nodes are available"}}};
        }
        pods[key] = pod;
        view.SetPod(key, ReadPod(pod));
      }
      std::vector<json> node_list, pod_list;
      for (const auto& [k, n] : nodes) node_list.push_back(n);
      for (const auto& [k, p] : pods) pod_list.push_back(p);
      const ClusterCapacity full = ComputeCapacity(pipeline, node_list, pod_list);
      const ClusterCapacity kept = view.Capacity(pipeline);
      ASSERT_EQ(kept.classes, full.classes) << "round " << round << " step " << step;
      ASSERT_EQ(kept.unschedulable, full.unschedulable) << "round " << round;
      ASSERT_EQ(view.HasNodes(), !nodes.empty());
    }
  }
}

TEST(Capacity, LowersOnlyTheLimitsOfSizedClasses) {
  ClusterCapacity c;
  c.classes = {{.hardware_class = "gpu", .placeable = 2, .scheduled = 3},
               {.hardware_class = "cpu", .placeable = 50, .scheduled = 0}};
  const model::Pipeline p = WithinCapacity(Pipeline(), c, {});
  EXPECT_EQ(p.spec.hardware_classes[0].max_replicas, 5);   // 100 in the spec, 5 fit
  EXPECT_EQ(p.spec.hardware_classes[1].max_replicas, 50);  // unlimited in the spec
  // A rollout of a GPU Deployment has one surge pod beside its 2 replicas: its room is not
  // the plan's.
  const json rolling = {{"metadata", {{"labels", {{"pipescale.io/hardware-class", "gpu"}}}}},
                        {"spec", {{"replicas", 2}}},
                        {"status", {{"replicas", 3}}}};
  EXPECT_EQ(WithinCapacity(Pipeline(), c, {{"d", api::ReadDeployment(rolling)}})
                .spec.hardware_classes[0]
                .max_replicas,
            4);
}

// Kairos on the shipped RM2 example: with no room left for the GPU class the pool is built from
// the classes that have it, and still serves the load.
TEST(Capacity, KairosMovesTheLoadToClassesWithRoom) {
  const auto parsed = api::ParsePipelineFile(std::string(PIPESCALE_SOURCE_DIR) +
                                             "/deploy/examples/kairos-rm2.yaml");
  ASSERT_TRUE(parsed.pipeline.has_value());
  const model::Workload load{{{"rank", 40}}};
  auto gpus = [](const model::Plan& plan) {
    int n = 0;
    for (const auto& t : plan.tasks) n += t.hardware_class == "g4dn-xlarge" ? t.replicas : 0;
    return n;
  };
  ASSERT_GT(gpus(optimizer::Solve(*parsed.pipeline, load, "kairos")), 0);
  ClusterCapacity full;
  for (const auto& hw : parsed.pipeline->spec.hardware_classes) {
    full.classes.push_back(
        {.hardware_class = hw.name, .nodes = 1, .placeable = hw.name == "g4dn-xlarge" ? 0 : 50});
  }
  const model::Plan plan =
      optimizer::Solve(WithinCapacity(*parsed.pipeline, full, {}), load, "kairos");
  EXPECT_EQ(gpus(plan), 0);
  EXPECT_GT(plan.TotalReplicas(), 0);
  EXPECT_GE(plan.served_fraction, 0.99) << plan.report.notes.size();
}

// What the Pod watch keeps of a pod: the little the count reads, and whose pipeline it is.
TEST(Capacity, APodIsReadForWhatTheCountNeeds) {
  json pod = Pod("n1", 2, "1", "shop", "gpu");
  const PodShare share = ReadPod(pod);
  EXPECT_FALSE(share.terminal);
  EXPECT_EQ(share.node, "n1");
  EXPECT_EQ(share.hardware_class, "gpu");
  EXPECT_EQ(share.pipeline, "ns/shop");
  EXPECT_EQ(share.requests.at("nvidia.com/gpu"), 2);
  EXPECT_EQ(share.requests.at("pods"), 1);
  pod["status"]["phase"] = "Failed";
  EXPECT_TRUE(ReadPod(pod).terminal);
  const json router = {
      {"metadata",
       {{"name", "r"}, {"namespace", "ns"}, {"labels", {{"pipescale.io/router", "shop"}}}}}};
  EXPECT_EQ(ReadPod(router).pipeline, "") << "not one of the pipeline's model pods";
  EXPECT_EQ(ReadPod(router).router_of, "ns/shop");
  EXPECT_NO_THROW(ReadPod(json("x")));
  EXPECT_NO_THROW(ReadNode(json::array()));
}

}  // namespace
}  // namespace pipescale::reconciler
