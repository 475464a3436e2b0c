#include "reconciler/batch_hold.h"

#include <gtest/gtest.h>

#include "api/deployment.h"
#include "api/deployment_view.h"
#include "api/pipeline_parse.h"
#include "optimizer/problem.h"
#include "optimizer/registry.h"
#include "support/choices.h"

namespace pipescale::reconciler {
namespace {

using nlohmann::json;

model::Pipeline OneTask() {
  const json spec = {
      {"apiVersion", "pipescale.io/v1alpha1"},
      {"kind", "InferencePipeline"},
      {"metadata", {{"name", "shop"}, {"namespace", "ns"}}},
      {"spec",
       {{"hardwareClasses", {{{"name", "cpu"}, {"costPerHour", 0.1}}}},
        {"tasks",
         {{{"name", "detect"},
           {"variants",
            {{{"name", "v"},
              {"batchSize", {{"max", 8}}},
              {"profiles",
               {{{"hardwareClass", "cpu"},
                 {"latencyMs", {{"quadratic", {{"a", 0}, {"b", 10}, {"c", 5}}}}}}}}}}}}}},
        {"paths", {{{"name", "p"}, {"tasks", {"detect"}}, {"sloMs", 500}}}}}}};
  return *api::ParsePipeline(spec.dump()).pipeline;
}

// A Deployment at generation 2 running batch 4; `rolled` says whether the controller is done.
json DeploymentObject(bool rolled) {
  return {
      {"metadata", {{"name", "shop-detect-v-cpu"}, {"generation", 2}}},
      {"spec",
       {{"replicas", 3},
        {"template",
         {{"spec",
           {{"containers",
             {{{"name", "model"}, {"env", {{{"name", "MAX_BATCH_SIZE"}, {"value", "4"}}}}}}}}}}}}},
      {"status",
       {{"observedGeneration", 2},
        {"replicas", rolled ? 3 : 4},
        {"updatedReplicas", rolled ? 3 : 1},
        {"readyReplicas", 3}}}};
}

api::DeploymentView Deployment(bool rolled) {
  return api::ReadDeployment(DeploymentObject(rolled));
}

TEST(RollingOut, UntilEveryPodRunsTheNewTemplate) {
  EXPECT_FALSE(RollingOut(Deployment(true)));
  EXPECT_TRUE(RollingOut(Deployment(false)));
  json unseen = DeploymentObject(true);
  unseen["metadata"]["generation"] = 3;  // changed, the controller has not acted yet
  EXPECT_TRUE(RollingOut(api::ReadDeployment(unseen)));
  json created = DeploymentObject(true);  // just created: nothing to restart
  created.erase("status");
  EXPECT_FALSE(RollingOut(api::ReadDeployment(created)));
}

struct Case {
  bool rolled;                   // this Deployment's rollout is done
  bool others_rolled;            // and another Deployment's of the pipeline
  std::optional<int> placeable;  // the class's room; nullopt: capacity unknown
  double latency_ms;             // measured on the path (SLO 500 ms)
  bool held;
};

// A missed SLO lets a batch change overtake another Deployment's rollout, but never its own
// (that would restart pods before their batch has served) nor a full class: with no room for
// the surge pod the new pods could not start.
TEST(HoldBatches, WaitForRolloutsUnlessTheSloIsMissedAndAlwaysForItsOwnAndForRoom) {
  const model::Pipeline p = OneTask();
  for (const Case& c :
       {Case{true, true, std::nullopt, 100, false}, Case{false, true, std::nullopt, 100, true},
        Case{false, true, std::nullopt, 900, true}, Case{true, false, std::nullopt, 100, true},
        Case{true, false, std::nullopt, 900, false}, Case{true, true, 0, 100, true},
        Case{true, true, 2, 100, false}, Case{true, true, 0, 900, true}}) {
    SCOPED_TRACE(::testing::Message()
                 << "rolled " << c.rolled << " others " << c.others_rolled << " room "
                 << c.placeable.value_or(-1) << " latency " << c.latency_ms);
    std::vector<PlannedDeployment> planned = {{.task = &p.spec.tasks[0],
                                               .variant = &p.spec.tasks[0].variants[0],
                                               .hardware_class = &p.spec.hardware_classes[0],
                                               .name = "shop-detect-v-cpu",
                                               .batch_size = 8}};
    std::optional<ClusterCapacity> capacity;
    if (c.placeable) {
      capacity = ClusterCapacity{.classes = {{.hardware_class = "cpu", .placeable = *c.placeable}}};
    }
    json other = DeploymentObject(c.others_rolled);
    other["metadata"]["name"] = "shop-other-v-cpu";
    const auto held =
        HoldBatchesDuringRollouts(p,
                                  {{"shop-detect-v-cpu", Deployment(c.rolled)},
                                   {"shop-other-v-cpu", api::ReadDeployment(other)}},
                                  {.path_latency_ms = {{"p", c.latency_ms}}}, capacity, planned);
    EXPECT_EQ(held.size(), c.held ? 1u : 0u);
    EXPECT_EQ(planned[0].batch_size, c.held ? 4 : 8);
  }
}

// A Deployment none of whose pods is Ready yet (woken from zero) keeps its batch whatever the
// SLO says: a change would replace its starting pods, and the requests held for them would wait
// a whole start-up more. Once one pod is Ready the batch may change; at 0 replicas there is no
// pod to replace.
TEST(HoldBatches, WaitForTheFirstReadyPodOfADeploymentThatStarts) {
  const model::Pipeline p = OneTask();
  for (const int ready : {0, 1}) {
    for (const int replicas : {0, 3}) {
      for (const double latency_ms : {100.0, 900.0}) {
        json woken = DeploymentObject(true);
        woken["spec"]["replicas"] = replicas;
        woken["status"]["readyReplicas"] = ready;
        std::vector<PlannedDeployment> planned = {{.task = &p.spec.tasks[0],
                                                   .variant = &p.spec.tasks[0].variants[0],
                                                   .hardware_class = &p.spec.hardware_classes[0],
                                                   .name = "shop-detect-v-cpu",
                                                   .batch_size = 8}};
        const auto held = HoldBatchesDuringRollouts(
            p, {{"shop-detect-v-cpu", api::ReadDeployment(woken)}},
            {.path_latency_ms = {{"p", latency_ms}}}, std::nullopt, planned);
        const bool starting = ready == 0 && replicas > 0;
        EXPECT_EQ(held.size(), starting ? 1u : 0u) << ready << " " << replicas << " " << latency_ms;
        EXPECT_EQ(planned[0].batch_size, starting ? 4 : 8);
        if (starting) {
          EXPECT_NE(held[0].find("first pod is Ready"), std::string::npos);
        }
      }
    }
  }
}

// A held batch keeps the servers' queue it runs with, not the one planned for the new batch.
TEST(HoldBatches, AHeldBatchKeepsItsServersQueue) {
  const model::Pipeline p = OneTask();
  json running = DeploymentObject(false);
  running["spec"]["template"]["spec"]["containers"][0]["env"].push_back(
      {{"name", api::kMaxQueueDelayEnv}, {"value", "30"}});
  std::vector<PlannedDeployment> planned = {{.task = &p.spec.tasks[0],
                                             .variant = &p.spec.tasks[0].variants[0],
                                             .hardware_class = &p.spec.hardware_classes[0],
                                             .name = "shop-detect-v-cpu",
                                             .batch_size = 8,
                                             .server_queue = {.max_delay_ms = 90}}};
  const auto held =
      HoldBatchesDuringRollouts(p, {{"shop-detect-v-cpu", api::ReadDeployment(running)}},
                                {.path_latency_ms = {{"p", 100}}}, {}, planned);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(planned[0].batch_size, 4);
  EXPECT_EQ(planned[0].server_queue, (model::ServerQueue{.max_delay_ms = 30}));
}

// A running batch past the spec's batchSize.max (the spec lowered it, or someone edited the
// Deployment) is never held: the decision would run a batch the spec forbids.
TEST(HoldBatches, NeverHoldABatchPastBatchSizeMax) {
  const model::Pipeline p = OneTask();     // batchSize.max 8
  json running = DeploymentObject(false);  // rolling out
  running["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = "110";
  std::vector<PlannedDeployment> planned = {{.task = &p.spec.tasks[0],
                                             .variant = &p.spec.tasks[0].variants[0],
                                             .hardware_class = &p.spec.hardware_classes[0],
                                             .name = "shop-detect-v-cpu",
                                             .batch_size = 8}};
  const auto held =
      HoldBatchesDuringRollouts(p, {{"shop-detect-v-cpu", api::ReadDeployment(running)}},
                                {.path_latency_ms = {{"p", 100}}}, {}, planned);
  EXPECT_TRUE(held.empty());
  EXPECT_EQ(planned[0].batch_size, 8);
}

// The room a rollout needs is what is left after the plan's own scale-outs: one slot free and
// a scale-out by one leaves none for the surge pod.
TEST(HoldBatches, CountTheRoomAfterThePlansScaleOuts) {
  const model::Pipeline p = OneTask();
  const ClusterCapacity capacity{.classes = {{.hardware_class = "cpu", .placeable = 1}}};
  for (const int planned_replicas : {3, 4}) {
    std::vector<PlannedDeployment> planned = {{.task = &p.spec.tasks[0],
                                               .variant = &p.spec.tasks[0].variants[0],
                                               .hardware_class = &p.spec.hardware_classes[0],
                                               .name = "shop-detect-v-cpu",
                                               .planned = planned_replicas,
                                               .target = planned_replicas,
                                               .batch_size = 8,
                                               .current = 3}};
    const auto held = HoldBatchesDuringRollouts(p, {{"shop-detect-v-cpu", Deployment(true)}}, {},
                                                capacity, planned);
    EXPECT_EQ(held.size(), planned_replicas == 4 ? 1u : 0u) << planned_replicas;
  }
}

// detect -> classify, one path, a 400 ms SLO; batching pays (a large fixed cost per batch). The
// servers form the batches, or the router (`router`).
model::Pipeline Chain(bool router = false) {
  auto variant = [router](double b, double c) {
    json batch = {{"max", 16}};
    if (router) batch["formedBy"] = "router";
    return json{{"name", "v"},
                {"batchSize", batch},
                {"profiles",
                 {{{"hardwareClass", "cpu"},
                   {"latencyMs", {{"quadratic", {{"a", 0}, {"b", b}, {"c", c}}}}}}}}};
  };
  const json spec = {
      {"apiVersion", "pipescale.io/v1alpha1"},
      {"kind", "InferencePipeline"},
      {"metadata", {{"name", "shop"}, {"namespace", "ns"}}},
      {"spec",
       {{"hardwareClasses", {{{"name", "cpu"}, {"costPerHour", 0.1}}}},
        {"tasks",
         {{{"name", "detect"}, {"next", {{{"task", "classify"}}}}, {"variants", {variant(10, 30)}}},
          {{"name", "classify"}, {"variants", {variant(5, 15)}}}}},
        {"paths", {{{"name", "p"}, {"tasks", {"detect", "classify"}}, {"sloMs", 400}}}}}}};
  return *api::ParsePipeline(spec.dump()).pipeline;
}

// Property, against the definition on every (rate, task, running batch), with the Deployments
// running one replica fewer, the same or one more than the plan: the running batch of a task is
// kept exactly when it needs no more replicas than the plan gives,
// and the path still meets its SLO with it, within kKeepBand unless the measured latency misses
// it (`late`), or no plan does, where the servers form the batches (changing theirs restarts
// pods); every other task keeps the plan's batch.
void ExpectTheDefinition(bool router, bool late) {
  const model::Pipeline p = Chain(router);
  model::MetricsSnapshot metrics;
  if (late) metrics.path_latency_ms["p"] = 401;
  const double band = late ? 0 : kKeepBand;
  int kept = 0, replaced = 0, banded = 0;
  for (double rps = 20; rps <= 400; rps += 20) {
    const model::Workload load{{{"p", rps}}};
    const model::Plan fresh = optimizer::Solve(p, load, "fa2");
    const optimizer::Problem problem = optimizer::Compile(p, load);
    for (int task = 0; task < 2; ++task) {
      for (int running = 1; running <= 16; ++running) {
        if (running == fresh.tasks[task].batch_size) continue;
        Deployments deployments;
        model::AppliedPlan applied;
        for (int i = 0; i < 2; ++i) {
          const model::TaskPlan& t = fresh.tasks[i];
          const model::Task& spec_task = p.spec.tasks[i];
          const std::string name =
              api::DeploymentName(p, spec_task, spec_task.variants[0], t.hardware_class);
          const int batch = i == task ? running : t.batch_size;
          // The Deployment may run other replicas than the plan's: a scale-out or -in that
          // keeps the batch restarts nothing, so the batch is kept across it.
          const int replicas = std::max(1, t.replicas + static_cast<int>(rps / 20) % 3 - 1);
          deployments[name] = api::ReadDeployment(
              api::BuildDeployment(p, {}, spec_task, spec_task.variants[0],
                                   p.spec.hardware_classes[0], replicas, batch));
          applied.plan.tasks.push_back({.replicas = t.replicas, .batch_size = batch});
          applied.deployments.push_back(name);
        }
        model::Plan plan = fresh;
        HoldAppliedBatches(p, load, metrics, &applied, deployments, plan);

        const auto at = [&](int i, int batch) {
          return testing::ChoiceWithin(problem, i, batch, fresh.tasks[i].replicas);
        };
        const optimizer::Choice* choice = at(task, running);
        optimizer::Assignment with = {*at(0, fresh.tasks[0].batch_size),
                                      *at(1, fresh.tasks[1].batch_size)};
        if (choice != nullptr) with[task] = *choice;
        const bool infeasible = fresh.report.status == model::SolveStatus::kInfeasible;
        const bool within = optimizer::MeetsSlos(problem, with, band);
        const bool keep =
            choice != nullptr && (router ? !infeasible && within : infeasible || within);
        banded += keep && !infeasible && !optimizer::MeetsSlos(problem, with);
        SCOPED_TRACE(::testing::Message()
                     << rps << " rps, task " << task << ", running b" << running);
        EXPECT_EQ(plan.tasks[task].batch_size, keep ? running : fresh.tasks[task].batch_size);
        EXPECT_EQ(plan.tasks[1 - task].batch_size, fresh.tasks[1 - task].batch_size);
        EXPECT_EQ(plan.TotalReplicas(), fresh.TotalReplicas());
        (keep ? kept : replaced)++;
      }
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(replaced, 0);
  // The band is exercised: some running batch is kept that a new plan could not choose.
  if (late) {
    EXPECT_EQ(banded, 0);
  } else {
    EXPECT_GT(banded, 0);
  }
}

TEST(HoldAppliedBatches, KeepsARunningBatchExactlyWhenItStillServes) {
  ExpectTheDefinition(/*router=*/false, /*late=*/false);
  ExpectTheDefinition(/*router=*/false, /*late=*/true);
}

// The demo's PlanChanged events flipped a router-formed batch at every interval while the
// replicas stood: the batch the operator applied is held as the servers' is.
TEST(HoldAppliedBatches, KeepsABatchTheRouterFormsWhileThePlanMeetsTheSlos) {
  ExpectTheDefinition(/*router=*/true, /*late=*/false);
  ExpectTheDefinition(/*router=*/true, /*late=*/true);
}

// While the scale-down window keeps 3 replicas where the plan asks 2, the running batch serves:
// the new one waits for the scale-in, unless the path already misses its SLO.
TEST(HoldBatches, WaitForTheScaleInTheWindowHoldsBack) {
  const model::Pipeline p = OneTask();
  for (const double latency_ms : {100.0, 900.0}) {
    std::vector<PlannedDeployment> planned = {{.task = &p.spec.tasks[0],
                                               .variant = &p.spec.tasks[0].variants[0],
                                               .hardware_class = &p.spec.hardware_classes[0],
                                               .name = "shop-detect-v-cpu",
                                               .planned = 2,
                                               .target = 3,
                                               .batch_size = 8,
                                               .current = 3}};
    const auto held =
        HoldBatchesDuringRollouts(p, {{"shop-detect-v-cpu", Deployment(true)}},
                                  {.path_latency_ms = {{"p", latency_ms}}}, std::nullopt, planned);
    EXPECT_EQ(held.size(), latency_ms < 500 ? 1u : 0u) << latency_ms;
  }
}

// The servers' wait to fill a batch is the whole wait the plan counted for the task, written
// with the batch and kept while it runs; the router's batches and a plan's own queue (hpa's)
// are left as the plan says, and a batch of 1 never waits. No wait passes the task's budget:
// a saturated plan counts its queue as 1e9 ms, which no server takes.
TEST(ServerQueueFor, WaitsNoLongerThanThePlanCountedAndMovesOnlyWithTheBatch) {
  constexpr double kBudget = 500;
  const model::Pipeline servers = OneTask();
  const model::Variant& v = servers.spec.tasks[0].variants[0];
  const model::TaskPlan batch4{.batch_size = 4, .queue_ms = 120, .batch_wait_ms = 40};
  EXPECT_EQ(ServerQueueFor(v, nullptr, batch4, nullptr, kBudget),
            (model::ServerQueue{.max_delay_ms = 120}));
  model::TaskPlan tight = batch4;
  tight.queue_ms = 0.2;
  tight.batch_wait_ms = 0.1;
  EXPECT_EQ(ServerQueueFor(v, nullptr, tight, nullptr, kBudget),
            (model::ServerQueue{.max_delay_ms = 1}));
  EXPECT_EQ(ServerQueueFor(v, nullptr, {.batch_size = 1, .queue_ms = 50}, nullptr, kBudget),
            model::ServerQueue{});
  model::TaskPlan saturated = batch4;
  saturated.queue_ms = optimizer::kMaxQueueMs;
  EXPECT_EQ(ServerQueueFor(v, nullptr, saturated, nullptr, kBudget),
            (model::ServerQueue{.max_delay_ms = kBudget}));
  EXPECT_EQ(ServerQueueFor(v, nullptr, saturated, nullptr, 0),
            (model::ServerQueue{.max_delay_ms = 1}));

  const api::ManagedFields same{.batch_size = 4, .server_queue = {.max_delay_ms = 30}};
  EXPECT_EQ(ServerQueueFor(v, nullptr, batch4, &same, kBudget), same.server_queue);
  const api::ManagedFields other{.batch_size = 2, .server_queue = {.max_delay_ms = 30}};
  EXPECT_EQ(ServerQueueFor(v, nullptr, batch4, &other, kBudget),
            (model::ServerQueue{.max_delay_ms = 120}));
  const api::ManagedFields unset{.batch_size = 4};  // the server's default: not the plan's
  EXPECT_EQ(ServerQueueFor(v, nullptr, batch4, &unset, kBudget),
            (model::ServerQueue{.max_delay_ms = 120}));

  model::TaskPlan own = batch4;
  own.server_queue = {.max_delay_ms = 5, .timeout_ms = 200};
  EXPECT_EQ(ServerQueueFor(v, nullptr, own, &same, kBudget), own.server_queue);
  const model::Pipeline router = Chain(/*router=*/true);
  EXPECT_EQ(ServerQueueFor(router.spec.tasks[0].variants[0], nullptr, batch4, nullptr, kBudget),
            model::ServerQueue{});
}

// Behind a busy server a batch grows past the plan's, as a dynamic batcher's do, to the largest
// the variant takes whose run, twice (the batch ahead, then its own), after the wait fits the
// task's budget: d(b) = 10 b + 5 ms here.
// A batch of 1 then waits 1 ms, not the server's default (the emulated server's 1 s). The
// router's batches and a plan's own queue are the plan's.
TEST(ServerQueueFor, LetsABatchGrowBehindABusyServerWithinTheBudget) {
  const model::Pipeline servers = OneTask();
  const model::Variant& v = servers.spec.tasks[0].variants[0];
  const model::Profile* profile = v.FindProfile("cpu");
  const model::TaskPlan one{.batch_size = 1, .queue_ms = 50};
  EXPECT_EQ(ServerQueueFor(v, profile, one, nullptr, 500),
            (model::ServerQueue{.max_delay_ms = 1, .max_batch = 8}))
      << "up to the variant's largest batch, 85 ms";
  EXPECT_EQ(ServerQueueFor(v, profile, one, nullptr, 112),
            (model::ServerQueue{.max_delay_ms = 1, .max_batch = 5}))
      << "1 ms and twice d(5) = 55 fit 112, twice d(6) does not";
  EXPECT_EQ(ServerQueueFor(v, profile, one, nullptr, 50), model::ServerQueue{})
      << "twice d(2) = 25 does not fit: the plan's batch of 1, without a wait";
  const model::TaskPlan four{.batch_size = 4, .queue_ms = 20, .batch_wait_ms = 10};
  EXPECT_EQ(ServerQueueFor(v, profile, four, nullptr, 150),
            (model::ServerQueue{.max_delay_ms = 20, .max_batch = 6}))
      << "the wait counts: 20 + twice d(6) = 150";
  EXPECT_EQ(ServerQueueFor(v, profile, four, nullptr, 60),
            (model::ServerQueue{.max_delay_ms = 20}));
  const api::ManagedFields grown{.batch_size = 1,
                                 .server_queue = {.max_delay_ms = 1, .max_batch = 3}};
  EXPECT_EQ(ServerQueueFor(v, profile, one, &grown, 500), grown.server_queue)
      << "kept while its batch runs: a change is a rolling restart";
  const model::Pipeline router = Chain(/*router=*/true);
  const model::Variant& rv = router.spec.tasks[0].variants[0];
  EXPECT_EQ(ServerQueueFor(rv, rv.FindProfile("cpu"), one, nullptr, 500), model::ServerQueue{});
  model::TaskPlan own = one;
  own.server_queue = {.max_delay_ms = 5};
  EXPECT_EQ(ServerQueueFor(v, profile, own, nullptr, 500), own.server_queue);
}

}  // namespace
}  // namespace pipescale::reconciler
