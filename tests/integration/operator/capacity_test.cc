// The operator on the cluster in a box when GPUs run out: each test brings its own emulated
// nodes (a NodePool), so the scheduler, the controllers and the node agent decide what runs,
// and the operator must plan for the room the cluster really has.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <numeric>
#include <sstream>

#include "integration/harness/cluster_test.h"
#include "integration/harness/load.h"
#include "integration/harness/local_env.h"
#include "integration/harness/node_pool.h"
#include "integration/harness/objects.h"
#include "integration/harness/wait.h"
#include "integration/operator/operator_process.h"
#include "kube/client.h"
#include "reconciler/batch_hold.h"
#include "reconciler/reconciler.h"

namespace pipescale {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::LocalEnv;
using namespace std::chrono_literals;

json GpuNode(const std::string& name, int gpus) {
  return {
      {"name", name},
      {"capacity", {{"cpu", "32"}, {"memory", "64Gi"}, {"nvidia.com/gpu", std::to_string(gpus)}}}};
}

// One GPU per replica; `admit` places it (a NodePool's selector, or one nothing matches).
json GpuClass(const json& admit) {
  json hw = {{"name", "gpu"},
             {"costPerHour", 1.0},
             {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}};
  hw.update(admit);
  return hw;
}

json Variant(const std::string& name, double accuracy, double ms_per_request) {
  const json profile = {
      {"hardwareClass", "gpu"},
      {"latencyMs", {{"quadratic", {{"a", 0}, {"b", ms_per_request}, {"c", 0}}}}}};
  return {{"name", name},
          {"accuracy", accuracy},
          {"batchSize", {{"max", 1}}},
          {"profiles", json::array({profile})}};
}

// Someone else's Deployment "other" of 3 pods, a GPU each, placed by `admit`.
json OthersGpuPods(const json& admit) {
  json other =
      testing::PlainDeployment("other", 3,
                               {{"containers",
                                 {{{"name", "m"},
                                   {"image", "pipescale/model-server:dev"},
                                   {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}});
  other["spec"]["template"]["spec"].update(admit);
  return other;
}

json Pipeline(const std::string& name, const std::string& optimizer, const json& hw,
              const json& variants) {
  return {{"apiVersion", "pipescale.io/v1alpha1"},
          {"kind", "InferencePipeline"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"optimizer", optimizer},
            {"interval", "2s"},
            {"hardwareClasses", json::array({hw})},
            {"tasks", json::array({{{"name", "detect"}, {"variants", variants}}})},
            {"paths", json::array({{{"name", "p"}, {"tasks", {"detect"}}, {"sloMs", 300}}})},
            {"behavior", {{"scaleDown", {{"stabilizationWindowSeconds", 0}}}}},
            {"metrics",
             {{"prometheusURL", LocalEnv::Get().Var("PIPESCALE_PROMETHEUS")},
              {"pathRate", testing::kFastRateQuery}}}}}};
}

class CapacityTest : public testing::ClusterTest {
 protected:
  void Create(const json& pipeline) {
    auto created =
        client_->Create(kube::CollectionPath(reconciler::kInferencePipelines, ns_), pipeline);
    ASSERT_TRUE(created.ok()) << created.error().message;
  }

  json Status(const std::string& name) {
    auto o = client_->Get(kube::ObjectPath(reconciler::kInferencePipelines, ns_, name));
    return o.ok() ? o->value("status", json::object()) : json::object();
  }

  // The pipeline's status condition of `type`; {} while there is none.
  json Condition(const std::string& pipeline, const std::string& type) {
    for (const json& c : Status(pipeline).value("conditions", json::array())) {
      if (c.value("type", "") == type) return c;
    }
    return json::object();
  }

  json Deployment(const std::string& name) {
    auto d = client_->Get(kube::ObjectPath(kube::kDeployments, ns_, name));
    return d.ok() ? *d : json{{"metadata", json::object()}, {"spec", json::object()}};
  }

  // The namespace's pods by phase, e.g. {"Running": 3, "Pending": 2}.
  std::map<std::string, int> Pods(const std::string& selector) {
    std::map<std::string, int> phases;
    auto pods = client_->Get("/api/v1/namespaces/" + ns_ +
                             "/pods?labelSelector=" + kube::QueryEscape(selector));
    if (!pods.ok()) return phases;
    for (const json& pod : (*pods)["items"]) {
      if (!pod["metadata"].contains("deletionTimestamp")) ++phases[pod["status"]["phase"]];
    }
    return phases;
  }

  // Ready pods among the namespace's pods that match `selector`, not counting terminating ones.
  int ReadyPods(const std::string& selector) {
    auto pods = client_->Get("/api/v1/namespaces/" + ns_ +
                             "/pods?labelSelector=" + kube::QueryEscape(selector));
    int ready = 0;
    for (const json& pod : pods.ok() ? (*pods)["items"] : json::array()) {
      if (pod["metadata"].contains("deletionTimestamp")) continue;
      for (const json& c : pod["status"].value("conditions", json::array())) {
        if (c["type"] == "Ready" && c["status"] == "True") ++ready;
      }
    }
    return ready;
  }

  // The replicas of a Deployment at rest: no rollout under way and exactly that many live pods,
  // all Ready; -1 while it moves.
  int Settled(const std::string& deployment, const std::string& selector) {
    const json d = Deployment(deployment);
    const int replicas = d["spec"].value("replicas", -1);
    const auto phases = Pods(selector);
    const int live = std::accumulate(phases.begin(), phases.end(), 0,
                                     [](int n, const auto& phase) { return n + phase.second; });
    const bool rest = !reconciler::RollingOut(api::ReadDeployment(d)) && live == replicas &&
                      ReadyPods(selector) == replicas &&
                      Deployment(deployment)["spec"].value("replicas", -1) == replicas;
    return rest ? replicas : -1;
  }

  // One line per pod: name, phase, Ready, terminating; for failure messages.
  std::string PodSummary(const std::string& selector) {
    std::string out;
    auto pods = client_->Get("/api/v1/namespaces/" + ns_ +
                             "/pods?labelSelector=" + kube::QueryEscape(selector));
    for (const json& pod : pods.ok() ? (*pods)["items"] : json::array()) {
      out += pod["metadata"].value("name", "") + " " + pod["status"].value("phase", "") +
             (pod["metadata"].contains("deletionTimestamp") ? " terminating" : "") + "\n";
    }
    return out;
  }

  int Events(const std::string& reason) {
    auto events = client_->Get("/api/v1/namespaces/" + ns_ +
                               "/events?fieldSelector=" + kube::QueryEscape("reason=" + reason));
    return events.ok() ? static_cast<int>((*events)["items"].size()) : -1;
  }
};

// A Deployment of someone else's takes 3 of the pool's 4 GPUs: FA2 would want 4 replicas at
// 200 rps, plans the 1 that fits and says it is short; when the other Deployment shrinks, the
// plan grows into the room, and every pod it asks for runs.
TEST_F(CapacityTest, PlansTheRoomLeftAndGrowsWhenItFrees) {
  testing::NodePool pool(ns_, json::array({GpuNode("gpu", 4)}));
  ASSERT_TRUE(Eventually([&] { return pool.ReadyNodes() == 1; }, 20s)) << pool.Log();
  json other = OthersGpuPods(pool.Admit(json::object()));
  ASSERT_TRUE(client_->Create(kube::CollectionPath(kube::kDeployments, ns_), other).ok());
  ASSERT_TRUE(Eventually([&] { return Pods("app=other")["Running"] == 3; }, 30s)) << pool.Log();

  testing::Load load(ns_, "fa2", {{"p", 200}});
  OperatorProcess op(ns_, "capacity");
  Create(Pipeline("fa2", "fa2", GpuClass(pool.Admit(json::object())),
                  json::array({Variant("v", 1.0, 20)})));
  const std::string deployment = "fa2-detect-v-gpu";
  ASSERT_TRUE(Eventually(
      [&] {
        const json s = Status("fa2");
        return s.contains("plan") && s["capacity"][0].value("limit", -1) == 1 &&
               Deployment(deployment)["spec"].value("replicas", -1) == 1;
      },
      40s))
      << Status("fa2").dump() << op.process().Log();
  EXPECT_EQ(Status("fa2")["capacity"][0]["placeable"], 0);
  // Nothing asked that cannot run: the pod runs (Pending until its node agent starts it, which
  // on CI's loaded machine came after the replicas were read).
  EXPECT_TRUE(Eventually(
      [&] {
        auto pods = Pods("pipescale.io/pipeline=fa2");
        return pods["Pending"] == 0 && pods["Running"] == 1;
      },
      30s))
      << PodSummary("pipescale.io/pipeline=fa2");

  auto scaled = client_->MergePatch(kube::ObjectPath(kube::kDeployments, ns_, "other"),
                                    {{"spec", {{"replicas", 0}}}});
  ASSERT_TRUE(scaled.ok());
  ASSERT_TRUE(Eventually(
      [&] {
        const int replicas = Deployment(deployment)["spec"].value("replicas", -1);
        return replicas > 1 && Pods("pipescale.io/pipeline=fa2")["Running"] == replicas;
      },
      40s))
      << Status("fa2").dump();
  EXPECT_LE(Deployment(deployment)["spec"].value("replicas", 99), 4);
  EXPECT_EQ(op.process().Stop(SIGTERM, 10s), 0) << op.process().Log();
}

// spec.priorityClassName: someone else's Deployment of a lower priority holds 3 of the pool's 4
// GPUs. FA2 wants 4 replicas at 200 rps; the room the other's pods hold is the pipeline's, so the
// plan asks for all 4, and the real scheduler preempts the other's pods to run every pod of it.
// Without the class (the test above) the same cluster plans 1. A pipeline of the lower priority
// then says it yields the class, and to whom.
TEST_F(CapacityTest, ALowerPrioritysRoomIsPlannedAndTheSchedulerPreemptsIt) {
  // PriorityClasses are cluster-wide: named after the test's namespace, deleted at its end.
  struct Classes {
    kube::Client& client;
    std::vector<std::string> names;
    ~Classes() {
      for (const std::string& n : names) {
        (void)client.Delete(kube::ObjectPath(kube::kPriorityClasses, "", n));
      }
    }
  } classes{*client_, {ns_ + "-batch", ns_ + "-online"}};
  for (const auto& [name, value] : {std::pair{classes.names[0], 100}, {classes.names[1], 1000}}) {
    auto created = client_->Create(kube::CollectionPath(kube::kPriorityClasses, ""),
                                   {{"apiVersion", "scheduling.k8s.io/v1"},
                                    {"kind", "PriorityClass"},
                                    {"metadata", {{"name", name}}},
                                    {"value", value}});
    ASSERT_TRUE(created.ok()) << created.error().message;
  }
  testing::NodePool pool(ns_, json::array({GpuNode("gpu", 4)}));
  ASSERT_TRUE(Eventually([&] { return pool.ReadyNodes() == 1; }, 20s)) << pool.Log();
  json other = OthersGpuPods(pool.Admit(json::object()));
  other["spec"]["template"]["spec"]["priorityClassName"] = classes.names[0];
  ASSERT_TRUE(client_->Create(kube::CollectionPath(kube::kDeployments, ns_), other).ok());
  ASSERT_TRUE(Eventually([&] { return Pods("app=other")["Running"] == 3; }, 30s)) << pool.Log();

  testing::Load load(ns_, "fa2", {{"p", 200}});
  OperatorProcess op(ns_, "capacity");
  json pipeline = Pipeline("fa2", "fa2", GpuClass(pool.Admit(json::object())),
                           json::array({Variant("v", 1.0, 20)}));
  pipeline["spec"]["priorityClassName"] = classes.names[1];
  Create(pipeline);
  const std::string deployment = "fa2-detect-v-gpu";
  ASSERT_TRUE(Eventually(
      [&] {
        return Deployment(deployment)["spec"].value("replicas", -1) == 4 &&
               Pods("pipescale.io/pipeline=fa2")["Running"] == 4;
      },
      60s))
      << Status("fa2").dump() << "\n"
      << PodSummary("app=other") << op.process().Log();
  EXPECT_EQ(Deployment(deployment)["spec"]["template"]["spec"]["priorityClassName"],
            classes.names[1]);
  EXPECT_EQ(Pods("app=other")["Running"], 0) << "preempted: " << PodSummary("app=other");
  EXPECT_EQ(Status("fa2")["capacity"][0].value("limit", -1), 4) << Status("fa2").dump();
  // A pipeline of the lower priority on the same pool has no room, and says to whom it yields.
  json batch = Pipeline("batch", "fa2", GpuClass(pool.Admit(json::object())),
                        json::array({Variant("v", 1.0, 20)}));
  batch["spec"]["priorityClassName"] = classes.names[0];
  Create(batch);
  const auto yielded = [&] { return Condition("batch", "Yielded"); };
  ASSERT_TRUE(Eventually([&] { return yielded().value("status", "") == "True"; }, 30s))
      << Status("batch").dump();
  EXPECT_EQ(yielded()["message"],
            "gpu: no room left; pods of a higher priority hold it: " + ns_ + "/fa2 (4)");
  EXPECT_EQ(op.process().Stop(SIGTERM, 10s), 0) << op.process().Log();
}

// spec.priorityClassName naming a class the cluster lacks: the API server refuses every pod of
// the pipeline's Deployments (the controller's ReplicaFailure), and PlanApplied says so, naming
// the Deployment and the API server's reason, instead of a plan that never runs.
TEST_F(CapacityTest, APriorityClassTheClusterLacksIsReportedWithTheAPIServersReason) {
  OperatorProcess op(ns_, "capacity");
  json pipeline = Pipeline("refused", "fa2", {{"name", "gpu"}, {"costPerHour", 1.0}},
                           json::array({Variant("v", 1.0, 20)}));
  pipeline["spec"]["priorityClassName"] = ns_ + "-nowhere";
  Create(pipeline);
  const auto applied = [&] { return Condition("refused", "PlanApplied"); };
  ASSERT_TRUE(Eventually([&] { return applied().value("reason", "") == "PodsRefused"; }, 40s))
      << Status("refused").dump() << op.process().Log();
  EXPECT_EQ(applied()["status"], "False");
  const std::string message = applied().value("message", "");
  EXPECT_NE(message.find("refused-detect-v-gpu: the API server refuses its pods"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(ns_ + "-nowhere"), std::string::npos) << message;
  EXPECT_EQ(op.process().Stop(SIGTERM, 10s), 0) << op.process().Log();
}

// Two pipelines of one priority, each wanting all of the pool's 8 GPUs: the first takes them,
// the second's claim holds the first to half, and once its pods have gone the second grows
// into them. Each status says the share it is held to and the other's.
TEST_F(CapacityTest, PipelinesOfOnePriorityDivideAFullPoolEqually) {
  testing::NodePool pool(ns_, json::array({GpuNode("gpu-a", 4), GpuNode("gpu-b", 4)}));
  ASSERT_TRUE(Eventually([&] { return pool.ReadyNodes() == 2; }, 20s)) << pool.Log();
  testing::Load load(ns_, {{"first", {{"p", 800}}}, {"second", {{"p", 800}}}});
  OperatorProcess op(ns_, "capacity");
  const auto create = [&](const std::string& name) {
    Create(Pipeline(name, "fa2", GpuClass(pool.Admit(json::object())),
                    json::array({Variant("v", 1.0, 20)})));
  };
  create("first");
  ASSERT_TRUE(Eventually(
      [&] { return Settled("first-detect-v-gpu", "pipescale.io/pipeline=first") == 8; }, 60s))
      << Status("first").dump() << op.process().Log();
  create("second");
  const auto settled = [&] {
    return Settled("first-detect-v-gpu", "pipescale.io/pipeline=first") == 4 &&
           Settled("second-detect-v-gpu", "pipescale.io/pipeline=second") == 4;
  };
  ASSERT_TRUE(Eventually(settled, 90s)) << Status("first").dump() << "\n"
                                        << Status("second").dump() << op.process().Log();
  for (const std::string name : {"first", "second"}) {
    const json status = Status(name);
    EXPECT_EQ(status["capacity"][0].value("pool", -1), 8) << status.dump();
    EXPECT_EQ(status["capacity"][0].value("share", -1), 4) << status.dump();
    EXPECT_EQ(status.value("share", ""), "gpu 4/8") << status.dump();
    const std::string other = name == "first" ? "second" : "first";
    const auto yielded = [&] { return Condition(name, "Yielded"); };
    EXPECT_TRUE(Eventually([&] { return yielded().value("reason", "") == "FairShare"; }, 20s))
        << Status(name).dump();
    EXPECT_EQ(yielded().value("message", ""),
              "gpu: held to a share of 4 of the 8 replicas its nodes hold; the others' shares: " +
                  ns_ + "/" + other + " (4)");
  }
  EXPECT_GE(Events("FairShare"), 1);
  // At rest: neither Deployment is written again over the next looks.
  const auto generations = [&] {
    return std::pair{Deployment("first-detect-v-gpu")["metadata"].value("generation", -1),
                     Deployment("second-detect-v-gpu")["metadata"].value("generation", -1)};
  };
  const auto before = generations();
  const double looked = op.Reconciles();
  EXPECT_TRUE(Eventually([&] { return op.Reconciles() >= looked + 10; }, 60s, 500ms));
  EXPECT_EQ(generations(), before);
  EXPECT_EQ(op.process().Stop(SIGTERM, 10s), 0) << op.process().Log();
}

// A class whose nodeSelector matches no node: the operator plans its one replica, says which
// Deployment waits and why (the scheduler's words) once, and does not rewrite it in a loop.
TEST_F(CapacityTest, ANodeSelectorThatMatchesNothingIsReportedOnce) {
  testing::Load load(ns_, "nowhere", {{"p", 20}});
  OperatorProcess op(ns_, "nowhere");
  Create(Pipeline("nowhere", "fa2", GpuClass({{"nodeSelector", {{"pool", "nowhere"}}}}),
                  json::array({Variant("v", 1.0, 20)})));
  ASSERT_TRUE(Eventually(
      [&] {
        const json s = Status("nowhere");
        return s.contains("unschedulable") && Events("Unschedulable") == 1;
      },
      40s))
      << Status("nowhere").dump() << op.process().Log();
  const json status = Status("nowhere");
  EXPECT_EQ(status["unschedulable"][0]["deployment"], "nowhere-detect-v-gpu");
  EXPECT_NE(status["unschedulable"][0]["message"].get<std::string>().find("node"),
            std::string::npos);
  EXPECT_EQ(status["capacity"][0]["nodes"], 0);
  for (const json& c : status["conditions"]) {
    if (c["type"] == "PlanApplied") {
      EXPECT_EQ(c["reason"], "Unschedulable");
      EXPECT_NE(c["message"].get<std::string>().find("nowhere-detect-v-gpu"), std::string::npos);
    }
  }
  const long generation = Deployment("nowhere-detect-v-gpu")["metadata"].value("generation", 0L);
  // Five more looks (the 2 s interval's 10 s), each of which could rewrite the Deployment or
  // report it again: counted by the operator's reconciles, so a slow machine makes as many.
  const double looked = op.Reconciles();
  EXPECT_TRUE(Eventually([&] { return op.Reconciles() >= looked + 5; }, 60s, 500ms))
      << op.process().Log();
  EXPECT_EQ(Deployment("nowhere-detect-v-gpu")["metadata"].value("generation", 0L), generation);
  EXPECT_EQ(Events("Unschedulable"), 1);
  EXPECT_EQ(op.process().Stop(SIGTERM, 10s), 0);
}

// Loki on a pool of 2 GPUs at a load that needs 3 of the accurate variant: the cluster is
// full, so it scales accuracy instead; a node joins and it goes back to the accurate variant.
TEST_F(CapacityTest, LokiScalesAccuracyWhenTheGpusRunOutAndBackWhenANodeJoins) {
  testing::NodePool pool(ns_, json::array({GpuNode("a", 2)}));
  ASSERT_TRUE(Eventually([&] { return pool.ReadyNodes() == 1; }, 20s)) << pool.Log();
  testing::Load load(ns_, "loki", {{"p", 50}});
  OperatorProcess op(ns_, "loki");
  Create(Pipeline("loki", "loki", GpuClass(pool.Admit(json::object())),
                  json::array({Variant("accurate", 1.0, 50), Variant("fast", 0.7, 10)})));
  auto phase = [&] { return Status("loki").value("plan", json::object()).value("phase", ""); };
  ASSERT_TRUE(Eventually([&] { return phase() == "AccuracyScaling"; }, 40s))
      << Status("loki").dump() << op.process().Log();
  EXPECT_LE(Status("loki")["totalReplicas"].get<int>(), 2);

  pool.SetNodes(json::array({GpuNode("a", 2), GpuNode("b", 2)}));
  ASSERT_TRUE(Eventually([&] { return pool.ReadyNodes() == 2; }, 20s)) << pool.Log();
  ASSERT_TRUE(Eventually([&] { return phase() == "HardwareScaling"; }, 40s))
      << Status("loki").dump();
  EXPECT_GE(Status("loki")["capacity"][0]["limit"].get<int>(), 3);
  EXPECT_EQ(op.process().Stop(SIGTERM, 10s), 0);
}

// The pid of the process the node agent runs for pod `name` at `ip` (its HOSTNAME and POD_IP:
// two pools' networks may share an address), or -1.
pid_t ProcessOf(const std::string& name, const std::string& ip) {
  DIR* proc = opendir("/proc");
  pid_t found = -1;
  for (dirent* e; proc != nullptr && found < 0 && (e = readdir(proc)) != nullptr;) {
    std::ifstream environ(std::string("/proc/") + e->d_name + "/environ");
    std::stringstream text;
    text << environ.rdbuf();
    const std::string all = text.str();
    if (all.find(std::string("POD_IP=") + ip + '\0') != std::string::npos &&
        all.find(std::string("HOSTNAME=") + name + '\0') != std::string::npos) {
      found = std::atoi(e->d_name);
    }
  }
  if (proc != nullptr) closedir(proc);
  return found;
}

// A batch change is a rolling update of real pods: new pods start before old ones stop
// (maxUnavailable 0), so the Ready pods never drop below the plan's replicas while it rolls.
// Then a pod's process dies (the node agent restarts it) and a pod is deleted (the ReplicaSet
// replaces it); the plan holds throughout.
TEST_F(CapacityTest, ABatchChangeRollsOutWithoutLosingReadyCapacity) {
  testing::NodePool pool(ns_, json::array({{{"name", "cpu"}, {"capacity", {{"cpu", "64"}}}}}));
  ASSERT_TRUE(Eventually([&] { return pool.ReadyNodes() == 1; }, 20s)) << pool.Log();
  testing::Load load(ns_, "roll", {{"p", 150}});
  OperatorProcess op(ns_, "roll");
  json variant = Variant("v", 1.0, 10);
  variant["batchSize"]["max"] = 8;
  variant["profiles"][0]["latencyMs"]["quadratic"]["c"] = 40;  // batching pays
  json hw = pool.Admit({{"name", "gpu"}, {"costPerHour", 1.0}});
  json roll = Pipeline("roll", "fa2", hw, json::array({variant}));
  // No scale-in while the test kills and deletes pods: the pod it watches must stay planned.
  roll["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] = 600;
  Create(roll);
  const std::string deployment = "roll-detect-v-gpu";
  const std::string selector = "pipescale.io/pipeline=roll";
  auto batch = [&] {
    const json d = Deployment(deployment);
    return d.contains("spec")
               ? d["spec"]["template"]["spec"]["containers"][0]["env"][0].value("value", "")
               : "";
  };
  // The baseline is taken at rest, once the measured rate has reached the load: earlier, the
  // plan still grows with the ramping rate, and a rollout of its own may be under way. (The
  // status rewrites a rate only when it moved by more than reconciler::kStatusJitter: 150 may
  // read as low as 137.)
  int replicas = -1;
  ASSERT_TRUE(Eventually(
      [&] {
        const double rate = Status("roll").value(json::json_pointer("/observed/pathRates/p"), 0.0);
        replicas = Settled(deployment, selector);
        return rate > 130 && replicas > 0 && batch() != "" && batch() != "1";
      },
      60s))
      << Status("roll").dump() << PodSummary(selector) << op.process().Log();
  const std::string before = batch();

  // Batching no longer allowed: the plan moves to batch 1 (and may add replicas).
  auto patched = client_->MergePatch(
      kube::ObjectPath(reconciler::kInferencePipelines, ns_, "roll"),
      {{"spec", {{"tasks", json::array({{{"name", "detect"}, {"variants", json::array({[&] {
                                                                json v = variant;
                                                                v["batchSize"]["max"] = 1;
                                                                return v;
                                                              }()})}}})}}}});
  ASSERT_TRUE(patched.ok()) << patched.error().message;
  // Ready pods never fall below the smaller of the replicas before and the replicas asked for
  // now (the plan may also scale in on its own).
  int shortfall = 0;
  std::string at_shortfall;
  ASSERT_TRUE(Eventually(
      [&] {
        const json d = Deployment(deployment);
        const int ready = ReadyPods(selector);
        // The replicas asked for both before and after the pods were counted: a scale-in
        // between the two reads is the plan's, not a loss (CI's loaded machine widens that gap).
        const int now = std::min(d["spec"].value("replicas", -1),
                                 Deployment(deployment)["spec"].value("replicas", -1));
        if (std::min(replicas, now) - ready > shortfall) {
          shortfall = std::min(replicas, now) - ready;
          at_shortfall = PodSummary(selector);
        }
        return batch() == "1" && Settled(deployment, selector) > 0;
      },
      60s, 100ms))
      << Status("roll").dump() << PodSummary(selector);
  EXPECT_EQ(shortfall, 0) << "Ready pods dropped below the plan during the rollout:\n"
                          << at_shortfall;

  // A model server dies: the node agent restarts it in place.
  auto pods = client_->Get("/api/v1/namespaces/" + ns_ +
                           "/pods?labelSelector=" + kube::QueryEscape(selector));
  ASSERT_TRUE(pods.ok());
  json pod;
  for (const json& p : (*pods)["items"]) {
    if (!p["metadata"].contains("deletionTimestamp")) pod = p;
  }
  ASSERT_TRUE(pod.is_object());
  const pid_t pid = ProcessOf(pod["metadata"]["name"], pod["status"]["podIP"]);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  const std::string name = pod["metadata"]["name"];
  json seen;
  ASSERT_TRUE(Eventually(
      [&] {
        auto p = client_->Get(kube::ObjectPath(kube::kPods, ns_, name));
        if (p.ok()) seen = (*p)["status"];
        return p.ok() && (*p)["status"]["containerStatuses"][0].value("restartCount", 0) >= 1 &&
               (*p)["status"]["containerStatuses"][0].value("ready", false);
      },
      30s))
      << name << " " << seen.dump() << "\n"
      << PodSummary(selector) << pool.Log();

  // A pod is deleted: the ReplicaSet replaces it; the plan does not move.
  const int planned = Deployment(deployment)["spec"]["replicas"];
  ASSERT_TRUE(client_->Delete(kube::ObjectPath(kube::kPods, ns_, name)).ok());
  ASSERT_TRUE(Eventually(
      [&] {
        auto p = client_->Get(kube::ObjectPath(kube::kPods, ns_, name));
        return !p.ok() && ReadyPods(selector) == planned;
      },
      30s));
  EXPECT_EQ(Deployment(deployment)["spec"]["replicas"], planned);
  EXPECT_NE(before, "1");
  EXPECT_EQ(op.process().Stop(SIGTERM, 10s), 0);
}

}  // namespace
}  // namespace pipescale
