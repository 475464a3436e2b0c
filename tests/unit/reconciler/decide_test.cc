#include "reconciler/decide.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "api/deployment.h"
#include "api/object_meta.h"
#include "api/pipeline_object.h"
#include "api/pipeline_parse.h"
#include "api/status_json.h"
#include "common/time.h"
#include "optimizer/problem.h"
#include "optimizer/registry.h"
#include "reconciler/batch_hold.h"
#include "reconciler/conditions.h"
#include "reconciler/idle.h"
#include "reconciler/worth_writing.h"
#include "support/choices.h"
#include "support/pipelines.h"
#include "support/query_sizes.h"
#include "support/views.h"

namespace pipescale::reconciler {
namespace {

using nlohmann::json;

// "shop" (detect -> classify on one CPU class; one path with a 500 ms SLO) as the apiserver
// stores it, on nodes labelled pool=cpu, scaling up at once and down after 5 minutes.
json Pipeline(const std::string& mode = "Apply") {
  json object = testing::ShopPipeline("shop");
  object["metadata"] = {{"name", "shop"}, {"namespace", "ns"}, {"uid", "u-1"}, {"generation", 3}};
  object["spec"]["mode"] = mode;
  object["spec"]["hardwareClasses"][0]["nodeSelector"] = {{"pool", "cpu"}};
  object["spec"]["behavior"] = {{"scaleDown", {{"stabilizationWindowSeconds", 300}}},
                                {"scaleUp", {{"stabilizationWindowSeconds", 0}}}};
  return object;
}

// The status a decision writes.
json Json(const Decision& d) { return api::StatusToJson(d.status); }

model::MetricsSnapshot Rate(double rps) { return {.path_rates_rps = {{"p", rps}}}; }

// A stand-in for the API server's state: applies a decision's writes to a map of Deployments
// and its status to the object.
struct World {
  json object = Pipeline();
  std::map<std::string, json> deployments;
  Memory memory;
  std::optional<json> routing;  // the routing ConfigMap, once written
  std::optional<ClusterCapacity> capacity;
  optimizer::MilpSolver milp_solver;  // empty: CBC here

  // What the reconciler observes of this state: each object as the informers decode it.
  Observed Observe(Result<model::MetricsSnapshot> metrics, double now) const {
    const api::PipelineObject read = api::ReadPipelineObject(object);
    return {.meta = read.meta,
            .status = read.status,
            .deployments = testing::DeploymentViews(deployments),
            .metrics = std::move(metrics),
            .now = now,
            .memory = memory,
            .routing_config_map = testing::ConfigMapView(routing),
            .capacity = capacity,
            .router_pipeline = read.for_router,
            .milp_solver = milp_solver};
  }
  api::ParsedPipeline Parsed() const { return api::ParseSpecOf(object); }

  Decision Step(Result<model::MetricsSnapshot> metrics, double now) {
    Decision d = Decide(Observe(std::move(metrics), now), Parsed());
    if (d.routing) {
      if (d.routing->create) {
        routing = d.routing->body;
      } else {
        routing->merge_patch(d.routing->body);  // as the API server applies a merge patch
      }
    }
    memory = d.memory;
    for (const auto& w : d.writes) {
      switch (w.kind) {
        case DeploymentWrite::Kind::kCreate:
          deployments[w.name] = w.body;
          break;
        case DeploymentWrite::Kind::kPatch:
        case DeploymentWrite::Kind::kScaleToZero: {
          json& dep = deployments.at(w.name);
          if (w.body["spec"].contains("replicas"))
            dep["spec"]["replicas"] = w.body["spec"]["replicas"];
          if (w.body["spec"].contains("template")) {
            // A strategic merge of the first container's env, by name.
            json& have = dep["spec"]["template"]["spec"]["containers"][0]["env"];
            for (const json& set : w.body["spec"]["template"]["spec"]["containers"][0]["env"]) {
              auto same = std::find_if(have.begin(), have.end(),
                                       [&](const json& e) { return e["name"] == set["name"]; });
              if (same != have.end()) {
                (*same)["value"] = set["value"];
              } else {
                have.push_back(set);
              }
            }
          }
          break;
        }
        case DeploymentWrite::Kind::kDelete:
          deployments.erase(w.name);
          break;
      }
    }
    // An instant deployment controller: every rollout has finished by the next look, its pods
    // Ready.
    for (auto& [name, dep] : deployments) {
      const int replicas = dep["spec"].value("replicas", 1);
      dep["status"]["replicas"] = replicas;
      dep["status"]["updatedReplicas"] = replicas;
      dep["status"]["readyReplicas"] = replicas;
    }
    // As the API server keeps it: the status goes through its JSON text.
    object["status"] = json::parse(Json(d).dump());
    return d;
  }

  // A decision whose writes all failed: the reconciler keeps its memory before it acts.
  Decision Lost(Result<model::MetricsSnapshot> metrics, double now) {
    Decision d = Decide(Observe(std::move(metrics), now), Parsed());
    memory = d.memory;
    return d;
  }

  // A new leader: nothing in memory but what the status and the rates in Prometheus give back.
  void FailOver(const model::RateHistory* rates = nullptr) {
    const auto parsed = Parsed();
    memory = Recall(Status(), rates, optimizer::OptimizerOf(parsed.pipeline->spec));
  }

  model::PipelineStatus Status() const { return api::ReadStatus(api::StatusOf(object)); }

  int Replicas(const std::string& name) const { return deployments.at(name)["spec"]["replicas"]; }
  int Batch(const std::string& name) const {
    return *api::ReadManagedFields(api::ReadDeployment(deployments.at(name)), "MAX_BATCH_SIZE")
                .batch_size;
  }
};

const std::string kDetect = "shop-detect-small-cpu";
const std::string kClassify = "shop-classify-tiny-cpu";

TEST(Decide, CreatesEveryDeploymentFromThePlan) {
  World w;
  const Decision d = w.Step(Rate(200), 1000);
  ASSERT_TRUE(d.plan.has_value());
  ASSERT_EQ(d.writes.size(), 2u);
  EXPECT_EQ(d.writes[0].kind, DeploymentWrite::Kind::kCreate);
  const json& dep = w.deployments.at(kDetect);
  EXPECT_EQ(dep["metadata"]["ownerReferences"][0]["uid"], "u-1");
  EXPECT_EQ(dep["metadata"]["labels"]["pipescale.io/variant"], "small");
  EXPECT_EQ(dep["spec"]["template"]["spec"]["nodeSelector"]["pool"], "cpu");
  EXPECT_EQ(w.Replicas(kDetect), d.plan->tasks[0].replicas);
  EXPECT_EQ(w.Batch(kDetect), d.plan->tasks[0].batch_size);
  EXPECT_GT(d.plan->TotalReplicas(), 2);  // 200 rps needs more than one replica each
  EXPECT_EQ(ConditionStatus(d.status.conditions, "Ready"), "True");
  EXPECT_EQ(ConditionStatus(d.status.conditions, "PlanApplied"), "True");
  EXPECT_EQ(Json(d)["observedGeneration"], 3);
  EXPECT_EQ(Json(d)["totalReplicas"], d.plan->TotalReplicas());
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_NE(d.events[0].find("detect new: "), std::string::npos) << d.events[0];
  EXPECT_EQ(d.requeue_after_seconds, 2);  // from no load to 200 rps: rising (below)
}

// While some path's rate climbs past the last reported one (by 10% and 0.5 rps), and after the
// first reading, the plan is looked at every 2 s; a steady load and a rise within noise wait for
// the interval.
TEST(Decide, WhileTheLoadRisesThePlanIsLookedAtEveryTwoSeconds) {
  World w;
  EXPECT_EQ(w.Step(Rate(100), 1000).requeue_after_seconds, 2);
  EXPECT_EQ(w.Step(Rate(100), 1002).requeue_after_seconds, 10);
  EXPECT_EQ(w.Step(Rate(130), 1004).requeue_after_seconds, 2);
  EXPECT_EQ(w.Step(Rate(143), 1006).requeue_after_seconds, 10);  // 10% of 130 and 0.5, not more
  EXPECT_EQ(w.Step(Rate(300), 1008).requeue_after_seconds, 2);
  // The first reading counts as a rise (its windows are still filling); then noise at a light
  // load does not.
  World light;
  EXPECT_EQ(light.Step(Rate(0.3), 1000).requeue_after_seconds, 2);
  EXPECT_EQ(light.Step(Rate(0.7), 1010).requeue_after_seconds, 10);
  EXPECT_EQ(light.Step(Rate(1.2), 1020).requeue_after_seconds, 10);
  // Anyone may write the status: rates that are not numbers read as none, and do not throw.
  for (const json& odd :
       {json("fast"), json::array({1}), json{{"p", "fast"}}, json{{"p", nullptr}}}) {
    World w2;
    w2.object["status"]["observed"]["pathRates"] = odd;
    EXPECT_EQ(w2.Step(Rate(5), 1000).requeue_after_seconds, 2) << odd.dump();
  }
}

// A rise is a move the status is rewritten for: whenever a look counts one, the path rates it
// decides are worth writing (the rule the reconciler writes by), so the next look compares with
// the risen rate. Were it not, a rise the write left out would count again at every look, every
// 2 s, for as long as the load held (1000 -> 1105 requests/s did before). 300 draws, 0-5000 rps.
TEST(Decide, ALookThatCountsARiseRewritesTheRateItRoseFrom) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> rate(0, 5000), rise(0.9, 1.3);
  int rises = 0;
  for (int draw = 0; draw < 300; ++draw) {
    World w;
    const double before = rate(rng), after = before * rise(rng);
    w.Step(Rate(before), 1000);
    const json written = w.object["status"]["observed"]["pathRates"];
    const Decision d = w.Step(Rate(after), 1010);
    const json status = Json(d);
    const bool held = std::ranges::any_of(status["conditions"], [](const json& c) {
      return c.value("reason", "") == reason::kBatchHeld;
    });
    if (d.requeue_after_seconds != 2 || held) continue;  // a held batch looks again in 2 s too
    ++rises;
    EXPECT_TRUE(WorthWriting(written, status["observed"]["pathRates"]))
        << before << " -> " << after;
  }
  EXPECT_GT(rises, 50);
  World w;
  w.Step(Rate(1000), 1000);
  EXPECT_EQ(w.Step(Rate(1105), 1010).requeue_after_seconds, 10);
}

// A path whose arrivals over the routers' last seconds surge past its measured rate is planned
// for the recent rate at once, as that rate measured would be, and looked at again in 2 s; the
// status keeps the measured rate (the watch compares with it until the windows catch up). A
// rise within counting noise changes nothing.
model::MetricsSnapshot Recent(double measured, double recent) {
  model::MetricsSnapshot m = Rate(measured);
  m.recent_path_rates_rps = {{"p", recent}};
  return m;
}

TEST(Decide, ASurgeIsPlannedForAtOnceAndANoisyRiseIsNot) {
  World steady, noisy, surged, measured;
  for (World* w : {&steady, &noisy, &surged, &measured}) w->Step(Rate(100), 1000);
  const Decision calm = steady.Step(Recent(100, 100), 1012);
  const Decision noise = noisy.Step(Recent(100, 108), 1012);
  const Decision surge = surged.Step(Recent(100, 200), 1012);
  const Decision risen = measured.Step(Rate(200), 1012);
  EXPECT_EQ(calm.requeue_after_seconds, 10);
  EXPECT_EQ(noise.requeue_after_seconds, 10);
  EXPECT_EQ(noise.plan->TotalReplicas(), calm.plan->TotalReplicas());
  EXPECT_EQ(surge.requeue_after_seconds, 2);
  EXPECT_GT(surge.plan->TotalReplicas(), calm.plan->TotalReplicas());
  EXPECT_EQ(surge.plan->TotalReplicas(), risen.plan->TotalReplicas());
  EXPECT_EQ(Json(surge)["observed"]["pathRates"]["p"], 100);
  // A router's series for a path the pipeline does not have plans nothing.
  model::MetricsSnapshot ghost = Rate(100);
  ghost.recent_path_rates_rps = {{"ghost", 5000}};
  World haunted;
  haunted.Step(Rate(100), 1000);
  const Decision strange = haunted.Step(ghost, 1012);
  EXPECT_EQ(strange.requeue_after_seconds, 10);
  EXPECT_TRUE(strange.surges.empty());
  EXPECT_EQ(strange.plan->TotalReplicas(), calm.plan->TotalReplicas());
}

// The cluster has room for 3 replicas of the class (2 run, 1 more fits): the plan stays within
// it and says why it is short; pods that wait are reported once, in the status, PlanApplied and
// one Warning, not at every look.
TEST(Decide, PlansWithinTheRoomTheClusterHasAndSaysWhoWaits) {
  World w;
  w.capacity = ClusterCapacity{
      .classes = {{.hardware_class = "cpu", .nodes = 1, .placeable = 1, .scheduled = 2}}};
  Decision d = w.Step(Rate(400), 1000);
  ASSERT_TRUE(d.plan.has_value());
  EXPECT_LE(d.plan->TotalReplicas(), 3);
  EXPECT_EQ(d.plan->report.status, model::SolveStatus::kInfeasible);
  EXPECT_EQ(Json(d)["capacity"][0]["limit"], 3);
  EXPECT_EQ(Json(d)["capacity"][0]["placeable"], 1);
  EXPECT_TRUE(d.warnings.empty());

  w.capacity->unschedulable = {{.deployment = kDetect,
                                .pods = 2,
                                .message = "0/1 nodes are available: 1 Insufficient cpu."}};
  d = w.Step(Rate(400), 1010);
  EXPECT_EQ(ConditionStatus(d.status.conditions, "PlanApplied"), "False");
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_EQ(d.warnings[0].reason, "Unschedulable");
  EXPECT_NE(d.warnings[0].message.find(kDetect + ": 2 pods wait: 0/1 nodes"), std::string::npos)
      << d.warnings[0].message;
  EXPECT_EQ(Json(d)["unschedulable"][0]["deployment"], kDetect);
  EXPECT_TRUE(w.Step(Rate(400), 1020).warnings.empty());  // the same pods still wait
  w.capacity->unschedulable[0].message = "0/2 nodes are available: 2 Insufficient cpu.";
  EXPECT_TRUE(w.Step(Rate(400), 1025).warnings.empty());  // a node joined: no news

  w.capacity->unschedulable.clear();
  d = w.Step(Rate(400), 1030);
  EXPECT_FALSE(Json(d).contains("unschedulable"));
  EXPECT_EQ(ConditionStatus(d.status.conditions, "PlanApplied"), "True");
}

// A Deployment whose pods the API server refuses (its controller's ReplicaFailure, as for a
// priorityClassName the cluster lacks): PlanApplied says which and why, a Warning goes out once
// per message, also while the metrics are missing, and PlanApplied is True again once fixed.
TEST(Decide, PodsTheAPIServerRefusesAreReportedOnce) {
  World w;
  w.Step(Rate(40), 1000);
  const std::string refused =
      "pods \"x\" is forbidden: no PriorityClass with name online was found";
  w.deployments.at(kDetect)["status"]["conditions"] = json::array({{{"type", "ReplicaFailure"},
                                                                    {"status", "True"},
                                                                    {"reason", "FailedCreate"},
                                                                    {"message", refused}}});
  Decision d = w.Step(Rate(40), 1010);
  EXPECT_EQ(ConditionStatus(d.status.conditions, "PlanApplied"), "False");
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_EQ(d.warnings[0].reason, "PodsRefused");
  EXPECT_EQ(d.warnings[0].message, kDetect + ": the API server refuses its pods: " + refused);
  EXPECT_TRUE(w.Step(Rate(40), 1020).warnings.empty()) << "no news";
  d = w.Step(Error{ErrorKind::kTransient, "down"}, 1030);
  EXPECT_EQ(ConditionStatus(d.status.conditions, "PlanApplied"), "False");
  EXPECT_TRUE(d.warnings.empty());
  w.deployments.at(kDetect)["status"]["conditions"][0]["status"] = "False";
  d = w.Step(Rate(40), 1040);
  EXPECT_EQ(ConditionStatus(d.status.conditions, "PlanApplied"), "True");
  EXPECT_TRUE(d.warnings.empty());
}

// A class full for the pipeline, held by pods of a higher priority: Yielded names them, a Normal
// event says so once (and again when the holders change), and the condition goes with them.
TEST(Decide, SaysToWhomItYieldsAFullClassOnce) {
  World w;
  w.capacity = ClusterCapacity{
      .classes = {{.hardware_class = "cpu", .nodes = 1, .placeable = 0, .scheduled = 1}},
      .yielded = {{.hardware_class = "cpu", .holders = {{"team-a/online", 3}}}}};
  Decision d = w.Step(Rate(400), 1000);
  EXPECT_EQ(ConditionStatus(d.status.conditions, "Yielded"), "True");
  ASSERT_EQ(d.notices.size(), 1u);
  EXPECT_EQ(d.notices[0].reason, "HigherPriority");
  EXPECT_EQ(d.notices[0].message,
            "cpu: no room left; pods of a higher priority hold it: "
            "team-a/online (3)");
  EXPECT_TRUE(w.Step(Rate(400), 1010).notices.empty()) << "the same holders: no news";
  w.capacity->yielded[0].holders["team-b/search"] = 1;
  EXPECT_EQ(w.Step(Rate(400), 1020).notices.size(), 1u);
  w.capacity->yielded.clear();
  d = w.Step(Rate(400), 1030);
  EXPECT_EQ(ConditionStatus(d.status.conditions, "Yielded"), "");
}

// Held to a share of a pool others contend for: Yielded says what the share is and the others',
// with reason FairShare; the plan stays within the share.
TEST(Decide, SaysItIsHeldToAShareOfThePool) {
  World w;
  w.capacity = ClusterCapacity{
      .classes = {{.hardware_class = "cpu",
                   .nodes = 1,
                   .placeable = 4,
                   .scheduled = 4,
                   .pool = 8,
                   .share = 2}},
      .yielded = {
          {.hardware_class = "cpu", .holders = {{"team-a/online", 6}}, .share = 2, .pool = 8}}};
  Decision d = w.Step(Rate(400), 1000);
  ASSERT_TRUE(d.plan.has_value());
  EXPECT_LE(d.plan->TotalReplicas(), 2);
  ASSERT_EQ(d.notices.size(), 1u);
  EXPECT_EQ(d.notices[0].reason, "FairShare");
  EXPECT_EQ(d.notices[0].message,
            "cpu: held to a share of 2 of the 8 replicas its nodes hold; the others' shares: "
            "team-a/online (6)");
  EXPECT_EQ(Json(d)["capacity"][0]["share"], 2);
  EXPECT_EQ(Json(d)["capacity"][0]["limit"], 2);
  EXPECT_EQ(Json(d)["share"], "cpu 4/8");
}

// What the pipeline needs of a pooled class: the plan's replicas when it did not reach its
// limit; else a second plan's, allowed the whole pool. Each is what an unconstrained plan takes.
TEST(Decide, SaysWhatItNeedsOfAPoolBeyondItsShare) {
  World w;
  w.capacity = ClusterCapacity{
      .classes = {
          {.hardware_class = "cpu", .nodes = 1, .placeable = 40, .scheduled = 0, .pool = 40}}};
  const model::Plan plan = *w.Step(Rate(400), 1000).plan;
  const int alone = plan.TotalReplicas();
  std::set<std::string> tasks;
  for (const model::TaskPlan& t : plan.tasks) tasks.insert(t.task);
  ASSERT_GT(alone, 2);
  World held;
  held.capacity = w.capacity;
  EXPECT_EQ(held.Step(Rate(400), 1000).needs.at("cpu").replicas, alone)
      << "within its limit: the plan";
  held.capacity->classes[0].share = 2;
  const Decision d = held.Step(Rate(400), 1010);
  EXPECT_LE(d.plan->TotalReplicas(), 2);
  EXPECT_EQ(d.needs.at("cpu").replicas, alone) << "at its limit: a plan given the pool";
  EXPECT_EQ(d.needs.at("cpu").tasks, static_cast<int>(tasks.size()));
  held.capacity->classes[0].pool = 0;
  EXPECT_TRUE(held.Step(Rate(400), 1020).needs.empty()) << "no pool: nothing to claim";
}

// The scale-down window keeps only what the class can hold: where the class's limit falls below
// what the window keeps (the room went to another Deployment of the plan, a node left), the
// replicas held above the plan are given up until the targets fit, and no further.
TEST(Decide, TheScaleDownWindowKeepsOnlyWhatTheClassHolds) {
  World w;
  w.capacity = ClusterCapacity{
      .classes = {
          {.hardware_class = "cpu", .nodes = 1, .placeable = 40, .scheduled = 0, .pool = 40}}};
  w.Step(Rate(400), 1000);
  const int high = w.Replicas(kDetect) + w.Replicas(kClassify);
  const auto total = [&] { return w.Replicas(kDetect) + w.Replicas(kClassify); };
  w.capacity->classes[0] = {.hardware_class = "cpu", .nodes = 1, .scheduled = high, .pool = 40};
  const int planned = w.Step(Rate(50), 1010).plan->TotalReplicas();
  ASSERT_LT(planned + 1, high) << "the load's fall must leave room to test";
  EXPECT_EQ(total(), high) << "room for all: the window holds";
  w.capacity->classes[0].scheduled = high - 1;
  w.Step(Rate(50), 1020);
  EXPECT_EQ(total(), high - 1) << "one fewer fits: one given up";
  w.capacity->classes[0].scheduled = planned;
  w.Step(Rate(50), 1030);
  EXPECT_EQ(total(), planned) << "down to the plan, no further";
}

TEST(Decide, SecondDecisionWritesNothing) {
  World w;
  w.Step(Rate(200), 1000);
  const json status = w.object["status"];
  const Decision again = w.Step(Rate(200), 1010);
  EXPECT_TRUE(again.writes.empty());
  EXPECT_TRUE(again.events.empty());
  EXPECT_EQ(Json(again), status);  // not even lastTransitionTime moves
}

TEST(Decide, EventsExactlyWhenReplicasOrBatchesChange) {
  World w;
  w.Step(Rate(200), 1000);
  auto shape = [](const model::Plan& p) {
    std::vector<std::pair<int, int>> out;
    for (const auto& t : p.tasks) out.emplace_back(t.replicas, t.batch_size);
    return out;
  };
  auto before = shape(*w.Step(Rate(200), 1001).plan);
  int quiet = 0, loud = 0;
  for (int rps = 201; rps <= 260; ++rps) {  // queue times move with every rate
    const Decision d = w.Step(Rate(rps), 1001 + rps);
    const auto now = shape(*d.plan);
    EXPECT_EQ(d.events.size(), now == before ? 0u : 1u) << rps << " rps";
    (now == before ? quiet : loud)++;
    before = now;
  }
  EXPECT_GT(quiet, 0);
  EXPECT_GT(loud, 0);
}

TEST(Decide, InvalidSpecIsReportedAndNothingWritten) {
  World w;
  w.object["spec"]["tasks"][0]["next"][0]["task"] = "clasify";
  const Decision d = w.Step(Rate(200), 1000);
  EXPECT_TRUE(d.writes.empty());
  EXPECT_FALSE(d.requeue_after_seconds.has_value());
  const json ready = Json(d)["conditions"][0];
  EXPECT_EQ(ready["type"], "Ready");
  EXPECT_EQ(ready["status"], "False");
  EXPECT_EQ(ready["reason"], "InvalidSpec");
  // Every problem, each with its field: the bad edge also leaves the path without an edge.
  EXPECT_EQ(ready["message"],
            "spec.tasks[0].next[0].task: unknown task \"clasify\"; spec.paths[0].tasks[1]: task "
            "\"classify\" does not follow \"detect\": no edge detect -> classify in spec.tasks");
}

TEST(Decide, MissingMetricsHoldAndNeverScaleDown) {
  World w;
  w.Step(Rate(400), 1000);
  const int before = w.Replicas(kDetect);
  const Decision down =
      w.Step(Error{ErrorKind::kTransient, "prometheus: connection refused"}, 1010);
  EXPECT_TRUE(down.writes.empty());
  EXPECT_EQ(w.Replicas(kDetect), before);
  EXPECT_EQ(ConditionStatus(down.status.conditions, "MetricsAvailable"), "False");
  // Missing metrics are not an invalid spec: Ready stays True, and what runs is reported.
  EXPECT_EQ(ConditionStatus(down.status.conditions, "Ready"), "True");
  EXPECT_EQ(Json(down)["totalReplicas"], before + w.Replicas(kClassify));

  model::MetricsSnapshot partial;
  partial.missing = {"pathRate{path=\"p\"}"};
  const Decision missing = w.Step(partial, 1020);
  EXPECT_TRUE(missing.writes.empty());
  EXPECT_NE(Json(missing)["conditions"].dump().find("SeriesMissing"), std::string::npos);
  // Missing metrics are looked for again within 10 s, whatever the interval.
  w.object["spec"]["interval"] = "60s";
  EXPECT_EQ(w.Step(partial, 1030).requeue_after_seconds, 10);
  EXPECT_EQ(w.Step(Rate(400), 1040).requeue_after_seconds, 60);
}

TEST(Decide, WithoutMetricsMissingDeploymentsStartSmall) {
  World w;
  const Decision d = w.Step(Error{ErrorKind::kTransient, "down"}, 1000);
  ASSERT_EQ(d.writes.size(), 2u);
  EXPECT_EQ(w.Replicas(kDetect), 1);
  EXPECT_EQ(w.Batch(kDetect), 1);
  // A fresh pipeline with no traffic yet: ready, and its status says what runs and costs.
  const json conditions = Json(d)["conditions"];
  EXPECT_EQ(ConditionStatus(conditions, "Ready"), "True");
  EXPECT_EQ(ConditionStatus(conditions, "MetricsAvailable"), "False");
  EXPECT_EQ(ConditionStatus(conditions, "PlanApplied"), "False");
  EXPECT_EQ(Json(d)["totalReplicas"], 2);
  EXPECT_DOUBLE_EQ(Json(d)["costPerHour"].get<double>(), 0.2);
  // Never planned yet: its series come with its first scrapes, so it looks again within 2 s,
  // where a planned pipeline that loses its metrics waits 10 (MissingMetricsHoldAndNeverScaleDown).
  EXPECT_EQ(d.requeue_after_seconds, 2);
}

// spec.minRate is warm capacity: a new pipeline starts with the plan for it before any metric,
// and the plan for any lower load, zero included, is the plan for it. A higher load is planned
// as measured. Checked against a pipeline without the floor planned at max(load, floor).
TEST(Decide, AMinimumRateIsPlannedBeforeTheFirstRequestAndNeverBelow) {
  constexpr double kFloor = 300;
  World floored;
  floored.object["spec"]["minRate"] = kFloor;
  floored.Step(Error{ErrorKind::kTransient, "no series yet"}, 1000);
  World plain;
  plain.Step(Rate(kFloor), 1000);
  EXPECT_GT(plain.Replicas(kDetect), 1);  // the floor must be a load that needs replicas
  EXPECT_EQ(floored.Replicas(kDetect), plain.Replicas(kDetect));
  EXPECT_EQ(floored.Replicas(kClassify), plain.Replicas(kClassify));
  double now = 1000;
  for (double load : {0.0, 100.0, 299.0, 450.0, 900.0, 0.0}) {
    now += 400;  // past the scale-down window: each load is planned for on its own
    World reference;
    reference.Step(Rate(std::max(load, kFloor)), now);
    const int was = floored.Batch(kDetect);
    floored.Step(Rate(load), now);
    floored.Step(Rate(load), now + 400);
    now += 400;
    EXPECT_EQ(floored.Replicas(kDetect), reference.Replicas(kDetect)) << load;
    EXPECT_EQ(floored.Replicas(kClassify), reference.Replicas(kClassify)) << load;
    // The plan's batch, or the one running where it still serves (reconciler/batch_hold.h).
    EXPECT_TRUE(floored.Batch(kDetect) == reference.Batch(kDetect) || floored.Batch(kDetect) == was)
        << load << ": batch " << floored.Batch(kDetect) << ", planned " << reference.Batch(kDetect)
        << ", running " << was;
  }
}

// A task's minReplicas holds at every load and before the first measurement, the status says what
// it costs, and a load that needs more is planned as measured.
TEST(Decide, ATasksMinimumReplicasHoldAtEveryLoadWithTheirCostInTheStatus) {
  World floored;
  floored.object["spec"]["tasks"][1]["minReplicas"] = 3;
  floored.Step(Error{ErrorKind::kTransient, "no series yet"}, 1000);
  EXPECT_EQ(floored.Replicas(kClassify), 3);
  double now = 1000;
  for (double load : {0.0, 10.0, 1000.0, 0.0}) {
    now += 400;  // past the scale-down window
    World reference;
    reference.Step(Rate(load), now);
    // Twice, a window apart: a drop is taken once the scale-down window has passed.
    floored.Step(Rate(load), now);
    now += 400;
    reference.Step(Rate(load), now);
    const Decision d = floored.Step(Rate(load), now);
    EXPECT_EQ(floored.Replicas(kDetect), reference.Replicas(kDetect)) << load;
    EXPECT_EQ(floored.Replicas(kClassify), std::max(3, reference.Replicas(kClassify))) << load;
    // One classify replica costs 0.1 an hour.
    const double floor_cost = 0.1 * std::max(0, 3 - reference.Replicas(kClassify));
    EXPECT_NEAR(Json(d)["plan"].value("minReplicasCostPerHour", 0.0), floor_cost, 1e-6) << load;
    EXPECT_NEAR(Json(d)["costPerHour"].get<double>(),
                Json(reference.Step(Rate(load), now))["costPerHour"].get<double>() + floor_cost,
                1e-6)
        << load;
  }
}

// A series that exists and reads 0 is load 0, not missing data: the pipeline is planned for no
// load (after the scale-down window) and Ready says so.
TEST(Decide, ZeroTrafficIsALoadNotMissingData) {
  World w;
  w.Step(Rate(400), 1000);
  w.Step(Rate(0), 1060);
  const Decision idle = w.Step(Rate(0), 1400);  // the 300 s window since 400 rps has passed
  const json conditions = Json(idle)["conditions"];
  EXPECT_EQ(ConditionStatus(conditions, "MetricsAvailable"), "True");
  EXPECT_EQ(ConditionStatus(conditions, "Ready"), "True");
  EXPECT_EQ(ConditionStatus(conditions, "PlanApplied"), "True");
  EXPECT_EQ(w.Replicas(kDetect), 1);
  EXPECT_EQ(w.Replicas(kClassify), 1);
}

// spec.scaleToZero: after afterIdleSeconds of rate 0 every model Deployment goes to 0 at once
// (the idle time is the window), Idle says so and an event marks it, once; a restart keeps it;
// missing metrics never put a pipeline to sleep nor wake it; the requests held at the door wake
// it, planned as arrivals over the rate's short window.
TEST(Decide, AnIdlePipelineSleepsAtZeroAndWakesForTheRequestsHeld) {
  World w;
  w.object["spec"]["router"] = json::object();
  w.object["spec"]["scaleToZero"] = {{"afterIdleSeconds", 60}};
  const auto reasons = [](const Decision& d) {
    std::string out;
    for (const Event& e : d.notices) out += e.reason + " ";
    return out;
  };
  w.Step(Rate(400), 1000);
  const int high = w.Replicas(kDetect);
  ASSERT_GT(high, 1);
  EXPECT_EQ(ConditionStatus(Json(w.Step(Rate(0), 1010))["conditions"], "Idle"), "False");
  const Decision quiet = w.Step(Rate(0), 1069);
  EXPECT_EQ(w.Replicas(kDetect), high);       // the scale-down window holds
  EXPECT_EQ(quiet.requeue_after_seconds, 1);  // it falls asleep at 1070
  const Decision asleep = w.Step(Rate(0), 1070);
  EXPECT_EQ(w.Replicas(kDetect), 0);
  EXPECT_EQ(w.Replicas(kClassify), 0);
  EXPECT_EQ(ConditionStatus(Json(asleep)["conditions"], "Idle"), "True");
  EXPECT_EQ(reasons(asleep), "Sleeping ");
  EXPECT_EQ(Json(asleep)["totalReplicas"], 0);
  EXPECT_EQ(asleep.requeue_after_seconds, kSleepingLookSeconds);
  // Twice: nothing new; after a failover: nothing new either.
  const Decision again = w.Step(Rate(0), 1071);
  EXPECT_TRUE(again.writes.empty());
  EXPECT_EQ(reasons(again), "");
  w.FailOver();
  const Decision recalled = w.Step(Rate(0), 1072);
  EXPECT_TRUE(recalled.writes.empty());
  EXPECT_EQ(reasons(recalled), "");
  EXPECT_TRUE(w.Step(Error{ErrorKind::kTransient, "down"}, 1073).writes.empty());
  EXPECT_EQ(w.Replicas(kDetect), 0);
  // 200 requests held, seen at this look: woken, planned as 200 rps (held over the second it takes
  // to see them).
  model::MetricsSnapshot held = Rate(0);
  held.door_waiting = {{"p", 200}};
  const Decision woken = w.Step(held, 1080);
  World reference;
  reference.Step(Rate(200), 1080);
  EXPECT_GT(reference.Replicas(kDetect), 1);  // a load that needs more than one
  EXPECT_EQ(w.Replicas(kDetect), reference.Replicas(kDetect));
  EXPECT_EQ(w.Replicas(kClassify), reference.Replicas(kClassify));
  EXPECT_GE(w.Replicas(kDetect), 1);
  EXPECT_EQ(ConditionStatus(Json(woken)["conditions"], "Idle"), "False");
  EXPECT_EQ(reasons(woken), "Woken ");
  EXPECT_NE(woken.notices[0].message.find("200 requests"), std::string::npos);
  EXPECT_FALSE(Json(woken)["memory"].contains("quietSince"));
}

// Load that returned at the same time of the period twice wakes the sleeping pipeline ahead of
// the third return, planned for the rate the returns saw, with an event; with no request in the
// window it sleeps again at its end, and a failover in between keeps the forecast.
TEST(Decide, APipelineWakesAheadOfLoadThatReturnedAtThisTimeAndSleepsWhenItDoesNot) {
  World w;
  w.object["spec"]["router"] = json::object();
  w.object["spec"]["scaleToZero"] = {
      {"afterIdleSeconds", 60}, {"wakeAhead", {{"periodSeconds", 1200}, {"confirmations", 2}}}};
  const double lead = w.Parsed().pipeline->WakeSeconds(0);
  const auto reasons = [](const Decision& d) {
    std::string out;
    for (const Event& e : d.notices) out += e.reason + " ";
    return out;
  };
  // Two periods: asleep, then 200 requests held at 300 s in, served at 200 rps for a minute.
  for (double start : {1000.0, 2200.0}) {
    w.Step(Rate(0), start);
    w.Step(Rate(0), start + 60);
    ASSERT_EQ(w.Replicas(kDetect), 0) << start;
    model::MetricsSnapshot held = Rate(0);
    held.door_waiting = {{"p", 1}};
    w.Step(held, start + 300);
    w.Step(Rate(200), start + 330);
    w.Step(Rate(0), start + 400);
  }
  w.Step(Rate(0), 3400);
  ASSERT_EQ(w.Replicas(kDetect), 0);
  const double ahead = 3400 + 300 - 60 - lead;  // a tolerance of 60 s and the lead
  EXPECT_EQ(reasons(w.Step(Rate(0), ahead - 1)), "");
  EXPECT_EQ(w.Replicas(kDetect), 0);
  const Decision woke = w.Step(Rate(0), ahead);
  EXPECT_EQ(reasons(woke), "WokenAhead ");
  World reference;
  reference.Step(Rate(200), ahead);
  EXPECT_GT(reference.Replicas(kDetect), 1);
  EXPECT_EQ(w.Replicas(kDetect), reference.Replicas(kDetect));
  EXPECT_EQ(ConditionStatus(Json(woke)["conditions"], "Idle"), "False");
  EXPECT_EQ(Json(woke)["memory"]["awakeAhead"]["p"]["until"], 3400 + 300 + 60);
  EXPECT_LE(woke.requeue_after_seconds, 3760 - ahead);
  w.FailOver();
  EXPECT_EQ(reasons(w.Step(Rate(0), ahead + 10)), "");
  EXPECT_EQ(w.Replicas(kDetect), reference.Replicas(kDetect));  // still awake ahead
  const Decision missed = w.Step(Rate(0), 3760);
  EXPECT_EQ(reasons(missed), "ForecastMissed ");
  EXPECT_EQ(w.Replicas(kDetect), 0);
  // The next period's return is no forecast: the last one did not come.
  EXPECT_EQ(reasons(w.Step(Rate(0), ahead + 1200)), "");
  EXPECT_EQ(w.Replicas(kDetect), 0);
}

// Without metrics a pipeline never falls asleep, however long it has been quiet.
TEST(Decide, MissingMetricsNeverPutAPipelineToSleep) {
  World w;
  w.object["spec"]["router"] = json::object();
  w.object["spec"]["scaleToZero"] = {{"afterIdleSeconds", 30}};
  w.Step(Rate(400), 1000);
  const int running = w.Replicas(kDetect);
  ASSERT_GT(running, 0);
  for (double now = 1010; now < 1200; now += 10) {
    w.Step(Error{ErrorKind::kTransient, "down"}, now);
    EXPECT_EQ(w.Replicas(kDetect), running) << now;
  }
}

// A new pipeline that may sleep is created asleep, metrics or not: its model Deployments start at
// 0 (none runs for afterIdleSeconds before its first request), and the first requests held at
// the door wake it, sized for them. One that may not starts at the plan for no load.
TEST(Decide, ANewPipelineThatMaySleepIsCreatedAsleepUntilItsFirstRequests) {
  for (const bool metrics : {false, true}) {
    World w;
    w.object["spec"]["router"] = json::object();
    w.object["spec"]["scaleToZero"] = {{"afterIdleSeconds", 60}};
    const Decision created =
        w.Step(metrics ? Result<model::MetricsSnapshot>(Rate(0))
                       : Result<model::MetricsSnapshot>(Error{ErrorKind::kTransient, "down"}),
               1000);
    EXPECT_EQ(w.Replicas(kDetect), 0) << metrics;
    EXPECT_EQ(w.Replicas(kClassify), 0) << metrics;
    EXPECT_EQ(Json(created)["totalReplicas"], 0) << metrics;
    const Decision quiet = w.Step(Rate(0), 1001);
    EXPECT_EQ(w.Replicas(kDetect), 0) << metrics;
    EXPECT_EQ(ConditionStatus(Json(quiet)["conditions"], "Idle"), "True") << metrics;
    EXPECT_EQ(quiet.requeue_after_seconds, kSleepingLookSeconds) << metrics;
    model::MetricsSnapshot held = Rate(0);
    held.door_waiting = {{"p", 200}};
    const Decision woken = w.Step(held, 1005);
    World reference;
    reference.Step(Rate(200), 1005);
    EXPECT_GT(reference.Replicas(kDetect), 1);
    EXPECT_EQ(w.Replicas(kDetect), reference.Replicas(kDetect)) << metrics;
    EXPECT_EQ(ConditionStatus(Json(woken)["conditions"], "Idle"), "False") << metrics;
    // Once it has served, it sleeps after its idle time, not at once.
    w.Step(Rate(0), 1010);
    EXPECT_EQ(w.Replicas(kDetect), reference.Replicas(kDetect)) << metrics;
    w.Step(Rate(0), 1069);
    EXPECT_GT(w.Replicas(kDetect), 0) << metrics;
    w.Step(Rate(0), 1070);
    EXPECT_EQ(w.Replicas(kDetect), 0) << metrics;
  }
  World always;
  always.Step(Error{ErrorKind::kTransient, "down"}, 1000);
  EXPECT_EQ(always.Replicas(kDetect), 1);
}

// While metrics are missing, a task that runs any Deployment gets no other: an idle plan that
// picks another variant or class (a tie) must not add Deployments at every reconcile.
TEST(Decide, HoldingNeverAddsDeploymentsToATaskThatRuns) {
  World w;
  w.Step(Error{ErrorKind::kTransient, "down"}, 1000);
  json moved = w.deployments.at(kDetect);
  w.deployments.erase(kDetect);
  moved["metadata"]["name"] = "shop-detect-small-gpu";
  // The same task, under a name the idle plan would not choose.
  w.object["spec"]["hardwareClasses"].push_back({{"name", "gpu"}, {"costPerHour", 1.0}});
  json profile = w.object["spec"]["tasks"][0]["variants"][0]["profiles"][0];
  profile["hardwareClass"] = "gpu";
  w.object["spec"]["tasks"][0]["variants"][0]["profiles"].push_back(profile);
  w.deployments["shop-detect-small-gpu"] = moved;
  for (double now : {1010.0, 1020.0, 1030.0}) {
    EXPECT_TRUE(w.Step(Error{ErrorKind::kTransient, "down"}, now).writes.empty());
  }
  EXPECT_EQ(w.deployments.size(), 2u);
}

TEST(Decide, ScaleDownWaitsForItsWindowScaleUpDoesNot) {
  World w;
  w.Step(Rate(400), 1000);
  const int high = w.Replicas(kDetect);
  w.Step(Rate(20), 1060);  // load dropped: held within the 300 s window
  EXPECT_EQ(w.Replicas(kDetect), high);
  w.Step(Rate(20), 1400);  // the high recommendation has left the window
  const int low = w.Replicas(kDetect);
  EXPECT_LT(low, high);
  w.Step(Rate(400), 1410);  // up: at once
  EXPECT_EQ(w.Replicas(kDetect), high);
}

// The window survives a failover: the new leader reads the recommendations from the status. A
// leader that started from nothing would scale down at once (checked, so the test can fail).
TEST(Decide, ANewLeaderHonoursTheScaleDownWindow) {
  World w;
  w.Step(Rate(400), 1000);
  const int high = w.Replicas(kDetect);
  w.Step(Rate(20), 1060);
  World forgetful = w;
  forgetful.memory = {};
  forgetful.Step(Rate(20), 1100);
  ASSERT_LT(forgetful.Replicas(kDetect), high);

  w.FailOver();
  w.Step(Rate(20), 1100);
  EXPECT_EQ(w.Replicas(kDetect), high);
  w.Step(Rate(20), 1330);  // 400 rps was recommended until 1060: 270 s ago
  EXPECT_EQ(w.Replicas(kDetect), high);
  w.Step(Rate(20), 1370);
  EXPECT_LT(w.Replicas(kDetect), high);
}

// Steady reconciles write the status once: the kept recommendations change only with the plan.
TEST(Decide, TheKeptMemoryChangesOnlyWithTheRecommendation) {
  World w;
  const Decision first = w.Step(Rate(100), 1000);
  const Decision again = w.Step(Rate(100), 1030);
  EXPECT_EQ(Json(again), Json(first));
  ASSERT_EQ(Json(again)["memory"]["recommendations"].size(), 1u);
  EXPECT_EQ(Json(again)["memory"]["recommendations"][0]["since"], 1000);
}

TEST(Decide, RecommendModeWritesNothing) {
  World w;
  w.object = Pipeline("Recommend");
  const Decision d = w.Step(Rate(200), 1000);
  EXPECT_TRUE(d.writes.empty());
  EXPECT_TRUE(w.deployments.empty());
  ASSERT_TRUE(d.plan.has_value());
  EXPECT_EQ(Json(d)["plan"]["tasks"].size(), 2u);
  const std::string applied = Json(d)["conditions"].dump();
  EXPECT_NE(applied.find("RecommendMode"), std::string::npos);
  EXPECT_NE(applied.find("2 Deployment changes recommended"), std::string::npos) << applied;
}

TEST(Decide, BudgetGuardHoldsScaleOut) {
  World w;
  w.Step(Rate(20), 1000);
  const int small = w.Replicas(kDetect) + w.Replicas(kClassify);
  w.object["spec"]["budget"] = {{"maxReplicas", small}};
  const Decision d = w.Step(Rate(400), 1010);
  EXPECT_EQ(w.Replicas(kDetect) + w.Replicas(kClassify), small);
  EXPECT_NE(Json(d)["conditions"].dump().find("OverBudget"), std::string::npos);
}

TEST(Decide, HandEditsAreRestoredFieldByField) {
  World w;
  w.Step(Rate(200), 1000);
  const int planned = w.Replicas(kDetect);
  w.deployments.at(kDetect)["spec"]["replicas"] = planned + 5;
  const Decision d = w.Step(Rate(200), 1010);
  ASSERT_EQ(d.writes.size(), 1u);
  EXPECT_EQ(d.writes[0].kind, DeploymentWrite::Kind::kPatch);
  EXPECT_EQ(d.writes[0].body, (json{{"spec", {{"replicas", planned}}}}));  // replicas only
  // The revert is reported, naming the field; the next decision has nothing to revert.
  ASSERT_EQ(d.reverts.size(), 1u);
  EXPECT_EQ(d.reverts[0], (Revert{kDetect, "spec.replicas", planned + 5, planned}));
  EXPECT_TRUE(w.Step(Rate(200), 1020).reverts.empty());
}

TEST(Decide, PlanChangesAreNotReverts) {
  World w;
  w.Step(Rate(200), 1000);
  const Decision up = w.Step(Rate(400), 1010);
  EXPECT_FALSE(up.writes.empty());
  EXPECT_TRUE(up.reverts.empty());
}

TEST(Decide, BatchOnlyChangeLeavesReplicasAlone) {
  World w;
  w.Step(Rate(200), 1000);
  const int batch = w.Batch(kDetect);
  w.deployments.at(kDetect)["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] =
      std::to_string(batch + 1);
  const Decision d = w.Step(Rate(200), 1010);
  ASSERT_EQ(d.writes.size(), 1u);
  EXPECT_FALSE(d.writes[0].body["spec"].contains("replicas"));
  EXPECT_EQ(d.writes[0].body["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"],
            std::to_string(batch));
}

TEST(Decide, LeftoverDeploymentsIdleOrGo) {
  World w;
  w.Step(Rate(200), 1000);
  // A second variant of classify that the plan does not use, and a task that is gone.
  json extra = w.deployments.at(kClassify);
  extra["metadata"]["name"] = "shop-classify-big-cpu";
  extra["metadata"]["labels"]["pipescale.io/variant"] = "big";
  w.deployments["shop-classify-big-cpu"] = extra;
  w.object["spec"]["tasks"][1]["variants"].push_back(w.object["spec"]["tasks"][1]["variants"][0]);
  w.object["spec"]["tasks"][1]["variants"][1]["name"] = "big";
  w.object["spec"]["tasks"][1]["variants"][1]["accuracy"] = 0.5;
  json gone = w.deployments.at(kDetect);
  gone["metadata"]["name"] = "shop-ocr-x-cpu";
  gone["metadata"]["labels"]["pipescale.io/task"] = "ocr";
  w.deployments["shop-ocr-x-cpu"] = gone;

  w.Step(Rate(200), 1010);
  EXPECT_EQ(w.Replicas("shop-classify-big-cpu"), 0);
  EXPECT_FALSE(w.deployments.contains("shop-ocr-x-cpu"));
}

// Rate noise that changes FA2's batch sizes but not its replicas restarts no pods: the running
// batches stay while they still carry the load within the SLOs.
TEST(Decide, NoiseDoesNotFlipBatchSizesAtEqualReplicas) {
  World w;
  w.Step(Rate(200), 1000);
  api::ParsedPipeline parsed = w.Parsed();
  ASSERT_TRUE(parsed.pipeline.has_value());
  int held = 0, followed = 0;
  for (double rps : {200.0, 195.0, 205.0, 190.0, 210.0, 185.0, 215.0, 180.0, 220.0, 240.0, 260.0}) {
    const model::Workload load{{{"p", rps}}};
    const model::Plan fresh = optimizer::Solve(*parsed.pipeline, load, "fa2");
    // Do the running batches still serve this rate with the same replicas within the SLO?
    const optimizer::Problem problem = optimizer::Compile(*parsed.pipeline, load);
    optimizer::Assignment running(2);
    bool fits = true;
    for (int i = 0; i < 2; ++i) {
      const std::string& name = i == 0 ? kDetect : kClassify;
      const optimizer::Choice* c =
          testing::ChoiceWithin(problem, i, w.Batch(name), w.Replicas(name));
      fits = fits && c != nullptr && fresh.tasks[i].replicas == w.Replicas(name);
      if (c != nullptr) running[i] = *c;
    }
    // Within the band a running batch keeps (reconciler/batch_hold.h): no path's latency is
    // measured here.
    fits = fits && optimizer::MeetsSlos(problem, running, kKeepBand);
    const int detect_batch = w.Batch(kDetect), classify_batch = w.Batch(kClassify);
    const Decision d = w.Step(Rate(rps), 2000 + rps);
    const bool fresh_differs =
        fresh.tasks[0].batch_size != detect_batch || fresh.tasks[1].batch_size != classify_batch;
    if (fits && fresh_differs) {
      ++held;
      EXPECT_TRUE(d.writes.empty()) << rps << " rps";
    } else if (fresh_differs) {
      ++followed;
      // Each task takes the new batch or keeps its own (one whose replicas did not change and
      // that still lets the path meet its SLO), and what runs meets the SLO.
      EXPECT_TRUE(w.Batch(kDetect) == fresh.tasks[0].batch_size || w.Batch(kDetect) == detect_batch)
          << rps << " rps";
      EXPECT_TRUE(w.Batch(kClassify) == fresh.tasks[1].batch_size ||
                  w.Batch(kClassify) == classify_batch)
          << rps << " rps";
      optimizer::Assignment applied(2);
      for (int i = 0; i < 2; ++i) {
        const std::string& name = i == 0 ? kDetect : kClassify;
        const optimizer::Choice* c =
            testing::ChoiceWithin(problem, i, w.Batch(name), w.Replicas(name));
        ASSERT_NE(c, nullptr) << rps << " rps";
        applied[i] = *c;
      }
      EXPECT_TRUE(optimizer::MeetsSlos(problem, applied, kKeepBand)) << rps << " rps";
    }
  }
  EXPECT_GT(held, 0) << "no rate in the sweep left the running batches feasible";
  EXPECT_GT(followed, 0) << "no rate in the sweep needed new batches";
}

// Loki on the same world: two variants of classify, a cluster of four replicas.
json LokiPipeline() {
  json p = Pipeline();
  p["spec"]["optimizer"] = "loki";
  p["spec"]["budget"] = {{"maxReplicas", 4}};
  json fast = p["spec"]["tasks"][1]["variants"][0];
  fast["name"] = "fast";
  fast["accuracy"] = 0.6;
  fast["profiles"][0]["latencyMs"]["quadratic"] = {{"a", 0}, {"b", 1}, {"c", 2}};
  p["spec"]["tasks"][1]["variants"].push_back(fast);
  return p;
}

TEST(Decide, LokiWritesItsVariantsAndRoutingTablesOnce) {
  World w;
  w.object = LokiPipeline();
  const Decision first = w.Step(Rate(50), 1000);
  ASSERT_TRUE(first.plan.has_value());
  EXPECT_EQ(Json(first)["plan"]["phase"], "HardwareScaling");
  ASSERT_TRUE(first.routing.has_value());
  EXPECT_TRUE(first.routing->create);
  EXPECT_EQ(first.routing->name, "shop-routing");
  EXPECT_EQ(first.routing->body["metadata"]["ownerReferences"][0]["uid"], "u-1");
  const json tables = json::parse(first.routing->body["data"]["routing.json"].get<std::string>());
  ASSERT_FALSE(tables["tables"].empty());
  EXPECT_EQ(tables["tables"][0]["task"], "detect");
  EXPECT_EQ(tables["tables"][0]["from"], "");

  // The same load again: nothing to write, not even the tables.
  const Decision again = w.Step(Rate(50), 1010);
  EXPECT_TRUE(again.writes.empty());
  EXPECT_FALSE(again.routing.has_value());
  EXPECT_TRUE(again.events.empty());

  // Past what four replicas of the accurate variants carry with the headroom p99 needs: the
  // fast variant takes a share.
  Decision busy;
  for (double t = 1020; t < 1200; t += 10) busy = w.Step(Rate(200), t);
  EXPECT_EQ(Json(busy)["plan"]["phase"], "AccuracyScaling") << Json(busy).dump();
  EXPECT_LT(Json(busy)["plan"]["accuracy"].get<double>(), 1.0);
  EXPECT_TRUE(w.deployments.contains("shop-classify-fast-cpu"));
  EXPECT_NE(w.routing->dump().find("fast"), std::string::npos);
}

// A pipeline moved from Loki to FA2: the routing ConfigMap loses Loki's tables (the router
// would go on applying them), and once it has, nothing more is written.
TEST(Decide, AnotherOptimizerRemovesTheTablesItNoLongerHands) {
  World w;
  w.object = LokiPipeline();
  w.Step(Rate(50), 1000);
  ASSERT_TRUE(w.routing && w.routing->at("data").contains("routing.json"));
  w.object["spec"]["optimizer"] = "fa2";
  const Decision moved = w.Step(Rate(50), 1010);
  ASSERT_TRUE(moved.routing.has_value());
  EXPECT_TRUE(moved.routing->body["data"]["routing.json"].is_null()) << moved.routing->body;
  EXPECT_FALSE(w.routing->at("data").contains("routing.json")) << *w.routing;
  EXPECT_FALSE(w.Step(Rate(50), 1020).routing.has_value());
}

// A MILP solver that dies (CLP's assertion, in the operator's child process) leaves no plan:
// what runs is held, nothing is scaled down for it, and the status says why.
TEST(Decide, ASolverThatDiesHoldsWhatRuns) {
  World w;
  w.object = LokiPipeline();
  w.Step(Rate(200), 1000);
  const auto running = w.deployments;
  w.milp_solver = [](const optimizer::Milp&, const optimizer::MilpOptions&) {
    return optimizer::MilpSolution{.status = optimizer::MilpStatus::kFailed,
                                   .failure = "the solver process died of signal 6 (ABRT)"};
  };
  const Decision d = w.Step(Rate(5), 1100);  // a load that would scale down
  EXPECT_TRUE(d.writes.empty());
  EXPECT_EQ(w.deployments, running);
  const std::string conditions = Json(d)["conditions"].dump();
  EXPECT_NE(conditions.find(reason::kHeld), std::string::npos) << conditions;
  EXPECT_NE(conditions.find("signal 6"), std::string::npos) << conditions;
  // Once the solver works again, the load is planned for (Loki keeps the window's peak: what
  // runs, so nothing to write) and nothing is held.
  w.milp_solver = nullptr;
  const Decision again = w.Step(Rate(5), 1200);
  EXPECT_TRUE(again.plan.has_value());
  const std::string now = Json(again)["conditions"].dump();
  EXPECT_EQ(now.find(reason::kHeld), std::string::npos) << now;
}

TEST(Decide, LokiPlansForTheSmoothedDemand) {
  World w;
  w.object = LokiPipeline();
  w.Step(Rate(100), 1000);
  EXPECT_DOUBLE_EQ(w.memory.demand.rps.at("p"), 100);
  // Within the interval (10 s) the demand stands: a reconcile an event triggers changes nothing.
  w.Step(Rate(360), 1005);
  EXPECT_DOUBLE_EQ(w.memory.demand.rps.at("p"), 100);
  const Decision d = w.Step(Rate(360), 1010);
  EXPECT_NEAR(w.memory.demand.rps.at("p"), 100 + (360 - 100) / 2.6, 1e-9);
  EXPECT_NEAR(Json(d)["observed"]["demand"]["p"].get<double>(), 200, 0.01);
}

TEST(Decide, LokiUsesMeasuredMultiplicativeFactors) {
  World w;
  w.object = LokiPipeline();
  model::MetricsSnapshot m = Rate(40);
  const Decision spec_factor = w.Step(m, 1000);
  World measured;
  measured.object = LokiPipeline();
  m.multiplicative_factors["detect/small"] = 3;  // three classifications per detection
  const Decision d = measured.Step(m, 1000);
  auto load = [](const Decision& x, const std::string& task) {
    double rps = 0;
    for (const model::TaskPlan& t : x.status.plan->plan.tasks) {
      if (t.task == task) rps += t.load_rps;
    }
    return rps;
  };
  EXPECT_NEAR(load(spec_factor, "classify"), 40, 0.01);
  EXPECT_NEAR(load(d, "classify"), 120, 0.01);
}

// One task on a gpu (5 ms, 200 qps, $1/h) and a cpu (20 ms, 50 qps, $0.1/h, at most 10).
json PoolPipeline(const std::string& optimizer) {
  json p = Pipeline();
  p["spec"]["optimizer"] = optimizer;
  auto profile = [](const char* hw, double ms) {
    return json{{"hardwareClass", hw},
                {"latencyMs", {{"quadratic", {{"a", 0}, {"b", 0}, {"c", ms}}}}}};
  };
  p["spec"]["hardwareClasses"] = {
      {{"name", "gpu"}, {"costPerHour", 1.0}, {"maxReplicas", 4}, {"startupSeconds", 20}},
      {{"name", "cpu"}, {"costPerHour", 0.1}, {"maxReplicas", 10}, {"startupSeconds", 20}}};
  p["spec"]["tasks"] = {{{"name", "m"},
                         {"variants",
                          {{{"name", "v"},
                            {"batchSize", {{"max", 1}}},
                            {"profiles", {profile("gpu", 5), profile("cpu", 20)}}}}}}};
  p["spec"]["paths"] = {{{"name", "p"}, {"tasks", {"m"}}, {"sloMs", 100}}};
  // The papers' own capacity rules, whose counts these tests reason with (the tail model's are
  // tested in tests/unit/optimizer/pool_test.cc).
  p["spec"]["slo"] = {{"latencyModel", "mean"}};
  return p;
}

TEST(Decide, KairosRunsOneDeploymentPerClassAndPublishesItsPools) {
  World w;
  w.object = PoolPipeline("kairos");
  const Decision first = w.Step(Rate(300), 1000);
  ASSERT_TRUE(first.plan.has_value());
  // 300 rps / 0.85 = 353 qps: eight cpus ($0.8) beat a gpu and four cpus ($1.4).
  EXPECT_EQ(w.Replicas("shop-m-v-cpu"), 8);
  EXPECT_EQ(w.Replicas("shop-m-v-gpu"), 0);  // created, ready to scale
  EXPECT_EQ(Json(first)["plan"]["upperBoundQps"], 400);
  EXPECT_EQ(Json(first)["costPerHour"], 0.8);
  EXPECT_EQ(ConditionStatus(first.status.conditions, "Feasible"), "True");
  ASSERT_TRUE(first.routing.has_value());
  const json pools = json::parse(first.routing->body["data"]["pools.json"].get<std::string>());
  EXPECT_EQ(pools["optimizer"], "kairos");
  ASSERT_EQ(pools["pools"][0]["members"].size(), 2u);
  EXPECT_EQ(pools["pools"][0]["members"][0]["hardwareClass"], "cpu");  // the base
  EXPECT_EQ(pools["pools"][0]["members"][0]["replicas"], 8);

  const json status = w.object["status"];
  const Decision again = w.Step(Rate(300), 1010);
  EXPECT_TRUE(again.writes.empty());
  EXPECT_FALSE(again.routing.has_value());
  EXPECT_EQ(Json(again), status);
}

// Kairos with sizes that matter: a gpu (8 ms + 4 ms a row) and a cpu (4 ms + 1.6 ms a row
// squared, so a 10-row query is too slow for it), queries of 1 row (3 in 4) or 10 by the spec.
json SizedPoolPipeline() {
  json p = PoolPipeline("kairos");
  json& v = p["spec"]["tasks"][0]["variants"][0];
  v["batchSize"]["max"] = 10;
  v["profiles"] = {
      {{"hardwareClass", "gpu"}, {"latencyMs", {{"quadratic", {{"b", 4}, {"c", 8}}}}}},
      {{"hardwareClass", "cpu"}, {"latencyMs", {{"quadratic", {{"a", 1.6}, {"c", 4}}}}}}};
  p["spec"]["querySizes"] = {{{"size", 1}, {"weight", 3}}, {{"size", 10}, {"weight", 1}}};
  p["spec"]["paths"][0]["sloMs"] = 120;
  p["spec"]["router"] = json::object();  // what measures the sizes
  return p;
}

model::MetricsSnapshot Sized(double rps, const std::vector<int>& sizes) {
  model::MetricsSnapshot m = Rate(rps);
  m.query_sizes = testing::SizeHistogram(sizes);
  return m;
}

// The router measures mostly 10-row queries: once the measurement has settled for a minute the
// plan is made for them, one QuerySizesShifted event says why, and the status shows both mixes.
// The same measurement again (and after a failover, which reads the mix back from the status)
// changes nothing, nor does a nudge back toward the spec's mix within kMixShift.
TEST(Decide, KairosPlansForTheMeasuredQuerySizesOnceTheyShift) {
  World w;
  w.object = SizedPoolPipeline();
  const Decision spec = w.Step(Sized(180, testing::Sizes({{1, 750}, {10, 250}})), 1000);
  ASSERT_TRUE(spec.plan.has_value());
  EXPECT_TRUE(spec.notices.empty());
  EXPECT_EQ(Json(spec)["observed"]["querySizes"]["source"], "spec");
  const json plan_before = Json(spec)["plan"];

  const auto large = testing::Sizes({{1, 250}, {10, 750}});
  const Decision settling = w.Step(Sized(180, large), 1010);
  EXPECT_TRUE(settling.notices.empty());
  EXPECT_EQ(Json(settling)["observed"]["querySizes"]["source"], "spec");
  EXPECT_EQ(Json(settling)["observed"]["querySizes"]["settlingSince"], FormatRfc3339(1010));
  EXPECT_TRUE(settling.writes.empty());
  EXPECT_EQ(Json(settling)["plan"], plan_before);

  const Decision shifted = w.Step(Sized(180, large), 1010 + kMixSettleSeconds);
  ASSERT_EQ(shifted.notices.size(), 1u);
  EXPECT_EQ(shifted.notices[0].reason, reason::kQuerySizesShifted);
  EXPECT_NE(shifted.notices[0].message.find("1: 25%, 10: 75%"), std::string::npos)
      << shifted.notices[0].message;
  const json mix = Json(shifted)["observed"]["querySizes"];
  EXPECT_EQ(mix["source"], "measured");
  EXPECT_EQ(mix["planned"], mix["measured"]);
  EXPECT_EQ(mix["shift"], 0.5);
  EXPECT_FALSE(mix.contains("settlingSince"));
  // With the larger queries the pool that served 180 requests/s no longer bounds them.
  EXPECT_GT(Json(shifted)["totalReplicas"], Json(spec)["totalReplicas"]);

  const json status = w.object["status"];
  w.FailOver();
  const Decision again = w.Step(Sized(180, large), 1080);
  EXPECT_TRUE(again.notices.empty());
  EXPECT_TRUE(again.writes.empty());
  EXPECT_EQ(Json(again)["plan"], status["plan"]);
  const Decision nudged = w.Step(Sized(180, testing::Sizes({{1, 330}, {10, 670}})), 1090);
  EXPECT_TRUE(nudged.notices.empty());
  EXPECT_EQ(Json(nudged)["observed"]["querySizes"]["planned"], mix["planned"]);
}

// The decision that adopted the measured mix is lost (its writes failed; the reconciler's
// memory has the mix already): the next decision still writes the plan for it and announces it,
// once, because the event follows the status rather than the memory.
TEST(Decide, AShiftWhoseWritesFailedIsAnnouncedWhenTheyLand) {
  World w;
  w.object = SizedPoolPipeline();
  const auto large = testing::Sizes({{1, 250}, {10, 750}});
  w.Step(Sized(180, testing::Sizes({{1, 750}, {10, 250}})), 1000);
  w.Step(Sized(180, large), 1010);
  const Decision lost = w.Lost(Sized(180, large), 1010 + kMixSettleSeconds);
  ASSERT_EQ(lost.notices.size(), 1u);
  ASSERT_FALSE(lost.writes.empty());

  const Decision retried = w.Step(Sized(180, large), 1080);
  ASSERT_EQ(retried.notices.size(), 1u);
  EXPECT_EQ(retried.notices[0].reason, reason::kQuerySizesShifted);
  EXPECT_EQ(Json(retried)["observed"]["querySizes"]["source"], "measured");
  EXPECT_EQ(retried.writes.size(), lost.writes.size());
  EXPECT_TRUE(w.Step(Sized(180, large), 1090).notices.empty());
}

// No router measurement (too few queries, or none): the spec's mix, and the plan holds.
TEST(Decide, KairosKeepsTheSpecsQuerySizesWithoutAMeasurement) {
  World w;
  w.object = SizedPoolPipeline();
  const Decision d = w.Step(Sized(60, testing::Sizes({{10, 100}})), 1000);
  EXPECT_EQ(Json(d)["observed"]["querySizes"]["source"], "spec");
  EXPECT_FALSE(Json(d)["observed"]["querySizes"].contains("measured"));
  EXPECT_FALSE(Json(d)["memory"].contains("queryMix"));
}

TEST(Decide, KairosSaysWhyTheBudgetFallsShort) {
  World w;
  w.object = PoolPipeline("kairos");
  w.object["spec"]["budget"] = {{"costPerHour", 0.5}};
  const Decision d = w.Step(Rate(300), 1000);
  EXPECT_EQ(ConditionStatus(d.status.conditions, "Feasible"), "False");
  const std::string conditions = Json(d)["conditions"].dump();
  EXPECT_NE(conditions.find("budget: $0.500/h"), std::string::npos) << conditions;
  // The informational notes (which rule chose the pool) stay out of the condition.
  EXPECT_EQ(conditions.find("Kairos pick"), std::string::npos) << conditions;
}

TEST(Decide, BudgetHoldsWhileReplicasMoveBetweenClasses) {
  // F9: from 8 cpu + 1 gpu ($1.8) to 10 cpu ($1.0) under a $1.85 budget. Both at once would
  // run 10 cpu + 1 gpu ($2.0): the gpu goes first, the cpus follow at the next decision.
  World w;
  w.object = PoolPipeline("kairos");
  // The default 300 s scale-down window: under budget pressure the scale-in does not wait it.
  w.object["spec"]["budget"] = {{"costPerHour", 1.85}};
  const std::map<std::string, double> price = {{"shop-m-v-gpu", 1.0}, {"shop-m-v-cpu", 0.1}};
  auto running_cost = [&](const std::map<std::string, json>& before) {
    double cost = 0;  // each Deployment at the larger of before and after
    for (const auto& [name, dep] : w.deployments) {
      int n = dep["spec"]["replicas"];
      if (before.contains(name)) n = std::max(n, before.at(name)["spec"]["replicas"].get<int>());
      cost += n * price.at(name);
    }
    return cost;
  };
  w.Step(Rate(500), 1000);
  EXPECT_EQ(w.Replicas("shop-m-v-cpu"), 8);
  EXPECT_EQ(w.Replicas("shop-m-v-gpu"), 1);

  auto before = w.deployments;
  const Decision moving = w.Step(Rate(400), 1010);
  EXPECT_LE(running_cost(before), 1.85 + 1e-9);
  EXPECT_EQ(w.Replicas("shop-m-v-gpu"), 0);
  EXPECT_EQ(w.Replicas("shop-m-v-cpu"), 8);
  EXPECT_EQ(ConditionStatus(moving.status.conditions, "PlanApplied"), "False");
  EXPECT_NE(Json(moving).dump().find("ScaleInFirst"), std::string::npos);

  before = w.deployments;
  const Decision done = w.Step(Rate(400), 1020);
  EXPECT_LE(running_cost(before), 1.85 + 1e-9);
  EXPECT_EQ(w.Replicas("shop-m-v-cpu"), 10);
  EXPECT_EQ(ConditionStatus(done.status.conditions, "PlanApplied"), "True");
}

TEST(Decide, MarkRemembersOneRatePerIntervalAndReportsItsForecast) {
  World w;
  w.object = PoolPipeline("mark");
  w.object["spec"]["forecast"] = {{"method", "linear"}, {"horizon", "60s"}};
  w.Step(Rate(100), 1000);
  w.Step(Rate(130), 1004);  // an event between intervals: not a new point
  Decision d = w.Step(Rate(110), 1010);
  ASSERT_EQ(d.memory.demand.series.at("p").size(), 2u);
  EXPECT_EQ(d.memory.demand.series.at("p")[1], 110);
  // Two points make no trend: flat at the rate now.
  EXPECT_EQ(Json(d)["plan"]["forecast"]["rps"][6], 110);
  for (int k = 2; k < 25; ++k) d = w.Step(Rate(100 + 10 * k), 1000 + 10 * k);
  ASSERT_EQ(d.memory.demand.series.at("p").size(), 25u);
  // 60 s ahead in 10 s steps, now first; the trend of +10 rps a step goes on, as it did before
  // (mark::ForecastTrust: the 9 forecasts whose steps have come all came true).
  const json forecast = Json(d)["plan"]["forecast"];
  EXPECT_EQ(forecast["stepSeconds"], 10);
  ASSERT_EQ(forecast["rps"].size(), 7u);
  EXPECT_EQ(forecast["rps"][0], 340);
  EXPECT_NEAR(forecast["rps"][6].get<double>(), 400, 1e-6);
  ASSERT_TRUE(d.routing.has_value() || w.routing.has_value());
}

// A new MArk leader forecasts from the rates Prometheus kept, not from nothing: the same trend as
// the leader that saw them one interval at a time.
TEST(Decide, ANewMarkLeaderForecastsFromTheRebuiltHistory) {
  World w;
  w.object = PoolPipeline("mark");
  w.object["spec"]["forecast"] = {{"method", "linear"}, {"horizon", "60s"}};
  model::RateHistory rates;
  for (int k = 0; k < 25; ++k) {
    rates["p"].push_back(100 + 10 * k);
    w.Step(Rate(100 + 10 * k), 1000 + 10 * k);
  }
  const Decision kept = w.Step(Rate(350), 1250);
  World fresh = w;
  fresh.FailOver(&rates);
  const Decision rebuilt = fresh.Step(Rate(350), 1250);
  EXPECT_EQ(rebuilt.memory.demand.series, kept.memory.demand.series);
  EXPECT_EQ(Json(rebuilt)["plan"]["forecast"], Json(kept)["plan"]["forecast"]);
  EXPECT_NEAR(Json(rebuilt)["plan"]["forecast"]["rps"][6].get<double>(), 410, 1e-6);
}

// FA2's burst allowance (when set) comes from the rates Prometheus kept after a failover: the new
// leader plans what the old one would have. One that started from nothing plans for the rate alone
// (checked, so the test can fail).
TEST(Decide, BurstAllowanceSurvivesAFailover) {
  World w;
  w.object["spec"]["behavior"]["scaleUp"]["burstAllowance"] = 2.5;
  model::RateHistory rates;
  for (int k = 0; k < 20; ++k) {
    const double rps = k % 2 == 0 ? 150 : 400;
    rates["p"].push_back(rps);
    w.Step(Rate(rps), 1000 + 10 * k);
  }
  World forgetful = w;
  World fresh = w;
  const Decision kept = w.Step(Rate(150), 1200);
  fresh.FailOver(&rates);
  const Decision rebuilt = fresh.Step(Rate(150), 1200);
  EXPECT_EQ(rebuilt.memory.demand.series, kept.memory.demand.series);
  EXPECT_EQ(Json(rebuilt)["plan"], Json(kept)["plan"]);
  forgetful.FailOver();
  const Decision blank = forgetful.Step(Rate(150), 1200);
  EXPECT_LT(Json(blank)["plan"]["tasks"][0]["loadRps"].get<double>(),
            Json(kept)["plan"]["tasks"][0]["loadRps"].get<double>());
}

// FA2's headroom is in the status: a path its clients saw unanswered is planned for more, and a
// new leader plans as the old one would have; one that started from nothing plans for the rate
// alone (checked, so the test can fail).
TEST(Decide, FaTwosHeadroomSurvivesAFailover) {
  World w;
  w.Step(Rate(150), 1000);
  model::MetricsSnapshot missed = Rate(150);
  missed.path_error_share["p"] = 0.2;
  const Decision raised = w.Step(missed, 1010);
  EXPECT_NEAR(Json(raised)["memory"]["headroom"]["paths"]["p"]["headroom"].get<double>(), 1.2,
              1e-9);
  EXPECT_NEAR(raised.headroom.at("p"), 1.2, 1e-9) << "what pipescale_path_headroom exports";
  World forgetful = w;
  const Decision kept = w.Step(Rate(150), 1020);
  forgetful.object["status"]["memory"].erase("headroom");
  forgetful.FailOver();
  const Decision blank = forgetful.Step(Rate(150), 1020);
  World fresh = w;
  fresh.FailOver();
  EXPECT_EQ(fresh.memory.demand.headroom, kept.memory.demand.headroom);
  const Decision recalled = fresh.Step(Rate(150), 1030);
  const Decision next = w.Step(Rate(150), 1030);
  EXPECT_EQ(Json(recalled)["plan"], Json(next)["plan"]);
  EXPECT_LT(Json(blank)["plan"]["tasks"][0]["loadRps"].get<double>(),
            Json(kept)["plan"]["tasks"][0]["loadRps"].get<double>());
}

// Where the cluster has no room for the headroom, FA2 plans the measured rate (more demand than
// fits only moves replicas between tasks) and the misses raise nothing. With room, the same
// misses buy more (checked, so the test can fail).
TEST(Decide, FaTwosHeadroomWithoutRoomPlansTheMeasuredRate) {
  model::MetricsSnapshot missed = Rate(100);
  missed.path_error_share["p"] = 0.5;
  World sized;
  const int fits = sized.Step(Rate(100), 1000).plan->TotalReplicas();
  const auto room = ClusterCapacity{
      .classes = {{.hardware_class = "cpu", .nodes = 1, .placeable = fits, .scheduled = 0}}};
  World measured;
  measured.capacity = room;
  const Decision plain = measured.Step(Rate(100), 1000);
  ASSERT_NE(plain.plan->report.status, model::SolveStatus::kInfeasible);
  World full;
  full.capacity = room;
  const Decision held = full.Step(missed, 1000);
  EXPECT_TRUE(held.memory.demand.headroom.paths.empty()) << "the full cluster's misses raise it";
  EXPECT_EQ(Json(held)["plan"], Json(plain)["plan"]);
  // Nor once the load has come down, while the window still holds the full cluster's misses.
  full.capacity.reset();
  model::MetricsSnapshot lower = Rate(50);
  lower.path_error_share["p"] = 0.5;
  EXPECT_TRUE(full.Step(lower, 1010).memory.demand.headroom.paths.empty());
  EXPECT_FALSE(full.Step(lower, 1060).memory.demand.headroom.paths.empty());
  World roomy;
  EXPECT_GT(roomy.Step(missed, 1000).plan->TotalReplicas(), fits);
}

// The SLO guard's quiet time is in the status: a new leader does not act again before it ends.
TEST(Decide, ANewMarkLeaderKeepsTheGuardsQuietTime) {
  World w;
  w.object = PoolPipeline("mark");
  model::MetricsSnapshot late = Rate(300);
  late.path_latency_ms["p"] = 150;
  w.Step(Rate(300), 1000);
  const Decision added = w.Step(late, 1010);
  EXPECT_EQ(Json(added)["memory"]["guardQuietUntil"], 1040);
  const int after = w.Replicas("shop-m-v-gpu") + w.Replicas("shop-m-v-cpu");
  w.FailOver();
  EXPECT_DOUBLE_EQ(w.memory.demand.guard_quiet_until, 1040);
  w.Step(late, 1020);
  EXPECT_EQ(w.Replicas("shop-m-v-gpu") + w.Replicas("shop-m-v-cpu"), after);
}

TEST(Decide, MarkGuardAddsReplicasOnceThenCoolsDown) {
  // F12: a late path adds one replica at once, none more until the added ones could serve.
  World w;
  w.object = PoolPipeline("mark");
  auto late = [](double ms) {
    model::MetricsSnapshot m = Rate(300);
    m.path_latency_ms["p"] = ms;
    return m;
  };
  w.Step(late(50), 1000);
  const int base = w.Replicas("shop-m-v-gpu") + w.Replicas("shop-m-v-cpu");
  const Decision added = w.Step(late(150), 1010);
  EXPECT_EQ(w.Replicas("shop-m-v-gpu") + w.Replicas("shop-m-v-cpu"), base + 1);
  EXPECT_DOUBLE_EQ(added.memory.demand.guard_quiet_until, 1010 + 30);
  w.Step(late(150), 1020);  // still late, but cooling down: the added replica stays
  EXPECT_EQ(w.Replicas("shop-m-v-gpu") + w.Replicas("shop-m-v-cpu"), base + 1);
  w.Step(late(150), 1040);  // the cool-down is over and it is still late
  EXPECT_EQ(w.Replicas("shop-m-v-gpu") + w.Replicas("shop-m-v-cpu"), base + 2);
}

TEST(Conditions, TransitionTimeMovesOnlyOnFlips) {
  std::vector<model::Condition> conditions;
  SetCondition(conditions, "Ready", true, "A", "", 1, 100);
  SetCondition(conditions, "Ready", true, "B", "m", 2, 200);
  ASSERT_EQ(conditions.size(), 1u);
  EXPECT_EQ(conditions[0].last_transition_time, FormatRfc3339(100));
  EXPECT_EQ(conditions[0].reason, "B");
  EXPECT_EQ(conditions[0].observed_generation, 2);
  SetCondition(conditions, "Ready", false, "C", "", 2, 300);
  EXPECT_EQ(conditions[0].last_transition_time, FormatRfc3339(300));
  EXPECT_EQ(conditions[0].message, "");
  EXPECT_EQ(ConditionStatus(conditions, "Ready"), "False");
  EXPECT_EQ(ConditionStatus(conditions, "Feasible"), "");
  EXPECT_EQ(FormatRfc3339(0), "1970-01-01T00:00:00Z");
}

// ----- profiles learned from the router (spec.profiles)

// The pipeline with a router and spec.profiles.learn; detect/small declared 10 b + 20 ms.
json Learning(const std::string& learn, double detect_c = 20) {
  json p = Pipeline();
  p["spec"]["router"] = json::object();
  p["spec"]["profiles"] = {{"learn", learn}};
  p["spec"]["tasks"][0]["variants"][0]["profiles"][0]["latencyMs"]["quadratic"] = {
      {"a", 0}, {"b", 10}, {"c", detect_c}};
  return p;
}

// `rps` on the path, and detect's batches of 4 measured at `scale` times the declared 60 ms.
model::MetricsSnapshot SlowDetect(double rps, double scale) {
  model::MetricsSnapshot m = Rate(rps);
  m.batch_timings[{"detect", "small", "cpu"}][4] = {.batches = 200, .mean_ms = 60 * scale};
  return m;
}

const json* Condition(const json& status, const std::string& type) {
  for (const json& c : status["conditions"]) {
    if (c["type"] == type) return &c;
  }
  return nullptr;
}

// Detect runs 1.3x its profile. Report says so and plans as declared; Plan plans as the true
// profile would, says so once, and a second look writes nothing new.
TEST(Decide, AMeasuredProfileIsReportedAndWithPlanPlannedFrom) {
  World truth;
  truth.object = Learning("Report", 20 * 1.3);
  truth.object["spec"]["tasks"][0]["variants"][0]["profiles"][0]["latencyMs"]["quadratic"]["b"] =
      13;
  truth.Step(Rate(30), 1000);

  World report;
  report.object = Learning("Report");
  const Decision reported = report.Step(SlowDetect(30, 1.3), 1000);
  const json reported_status = Json(reported);
  const json* accurate = Condition(reported_status, "ProfileAccurate");
  ASSERT_NE(accurate, nullptr);
  EXPECT_EQ((*accurate)["status"], "False");
  EXPECT_EQ((*accurate)["reason"], "Drift");
  ASSERT_EQ(reported.warnings.size(), 1u);
  EXPECT_EQ(reported.warnings[0].reason, reason::kProfileDrift);
  const json seen = Json(reported)["observed"]["profiles"][0];
  EXPECT_EQ(seen["ratio"], 1.3);
  EXPECT_EQ(seen["plannedRatio"], 1);
  EXPECT_EQ(seen["points"][0]["measuredMs"], 78);
  EXPECT_EQ(seen["points"][0]["declaredMs"], 60);

  World plan;
  plan.object = Learning("Plan");
  const Decision planned = plan.Step(SlowDetect(30, 1.3), 1000);
  ASSERT_EQ(planned.notices.size(), 1u);
  EXPECT_EQ(planned.notices[0].reason, reason::kProfileCorrected);
  EXPECT_EQ(plan.Replicas(kDetect), truth.Replicas(kDetect));
  EXPECT_GT(plan.Replicas(kDetect), report.Replicas(kDetect));
  EXPECT_EQ(Json(planned)["observed"]["profiles"][0]["plannedRatio"], 1.3);

  const json status = plan.object["status"];
  const Decision again = plan.Step(SlowDetect(30, 1.3), 1010);
  EXPECT_TRUE(again.notices.empty());
  EXPECT_TRUE(again.warnings.empty());
  EXPECT_TRUE(again.writes.empty());
  EXPECT_EQ(plan.object["status"], status);
}

// A new leader with no batches in the window (no load for five minutes) plans from what the last
// one learned, not from the profile known to be wrong; a re-profiled spec forgets it.
TEST(Decide, ALearnedProfileSurvivesAFailoverAndGoesWithANewProfile) {
  World w;
  w.object = Learning("Plan");
  w.Step(SlowDetect(30, 1.3), 1000);
  const int corrected = w.Replicas(kDetect);
  w.FailOver();
  w.Step(Rate(30), 1010);
  EXPECT_EQ(w.Replicas(kDetect), corrected);
  EXPECT_EQ(w.object["status"]["memory"]["profiles"][0]["ratio"], 1.3);

  World declared;
  declared.object = Learning("Plan");
  declared.Step(Rate(30), 1000);
  EXPECT_LT(declared.Replicas(kDetect), corrected);
}

// Without a router nothing measures the batches; before enough batches, Unknown says so.
TEST(Decide, ProfileAccurateIsUnknownUntilMeasuredAndAbsentWithoutARouter) {
  World routed;
  routed.object = Learning("Report");
  const json waiting = Json(routed.Step(Rate(30), 1000));
  const json* accurate = Condition(waiting, "ProfileAccurate");
  ASSERT_NE(accurate, nullptr);
  EXPECT_EQ((*accurate)["status"], "Unknown");
  EXPECT_EQ((*accurate)["reason"], "NotMeasured");
  const json measured = Json(routed.Step(SlowDetect(30, 1.05), 1010));
  EXPECT_EQ((*Condition(measured, "ProfileAccurate"))["reason"], "Measured");

  World bare;  // the default pipeline: no spec.router
  const json status = Json(bare.Step(Rate(30), 1000));
  EXPECT_EQ(Condition(status, "ProfileAccurate"), nullptr);
}

TEST(Decide, LearningOffMeasuresNothingAndSaysNothing) {
  World w;
  w.object = Learning("Off");
  const Decision d = w.Step(SlowDetect(30, 1.3), 1000);
  const json status = Json(d);
  EXPECT_EQ(Condition(status, "ProfileAccurate"), nullptr);
  EXPECT_FALSE(Json(d)["observed"].contains("profiles"));
  EXPECT_TRUE(d.warnings.empty());
}

}  // namespace
}  // namespace pipescale::reconciler
