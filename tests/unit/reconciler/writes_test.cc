// Finding the changes made outside the operator against the plan the status keeps, and telling
// what changed between two of those plans.
#include "reconciler/writes.h"

#include <gtest/gtest.h>

#include "api/status_json.h"
#include "reconciler/status.h"

namespace pipescale::reconciler {
namespace {

using nlohmann::json;

struct Fixture {
  model::Task task{.name = "detect", .variants = {{.name = "small"}}};
  model::HardwareClass cpu{.name = "cpu", .cost_per_hour = 0.1};

  PlannedDeployment Planned(int target, int batch) const {
    return {.task = &task,
            .variant = &task.variants[0],
            .hardware_class = &cpu,
            .name = "d",
            .planned = target,
            .target = target,
            .batch_size = batch};
  }
  static api::DeploymentView Deployment(int replicas, int batch) {
    return api::ReadDeployment(
        json{{"metadata", {{"name", "d"}}},
             {"spec",
              {{"replicas", replicas},
               {"template",
                {{"spec",
                  {{"containers",
                    {{{"name", "m"},
                      {"env",
                       {{{"name", "MAX_BATCH_SIZE"}, {"value", std::to_string(batch)}}}}}}}}}}}}}});
  }
  static model::AppliedPlan Applied(int replicas, int batch) {
    return {.plan = {.tasks = {{.replicas = replicas, .batch_size = batch}}}, .deployments = {"d"}};
  }
};

TEST(FindReverts, NamesEachFieldChangedOutsideTheOperator) {
  const Fixture f;
  const Deployments now = {{"d", Fixture::Deployment(7, 16)}};
  const model::AppliedPlan applied = Fixture::Applied(3, 8);
  const auto reverts = FindReverts(&applied, now, {f.Planned(3, 8)});
  ASSERT_EQ(reverts.size(), 2u);
  EXPECT_EQ(reverts[0], (Revert{"d", "spec.replicas", 7, 3}));
  EXPECT_EQ(reverts[1].field, "spec.template.spec.containers[0].env[MAX_BATCH_SIZE]");
  EXPECT_NE(reverts[0].Message().find("changed to 7 outside the operator; set back to 3"),
            std::string::npos);
}

TEST(FindReverts, APlanChangeOrAnEditThePlanAgreesWithIsNone) {
  const Fixture f;
  const model::AppliedPlan applied = Fixture::Applied(3, 8);
  // The operator set 3 and now asks for 5: its own change.
  EXPECT_TRUE(FindReverts(&applied, {{"d", Fixture::Deployment(3, 8)}}, {f.Planned(5, 8)}).empty());
  // Someone set 5, which is what the plan wants now: nothing is put back.
  EXPECT_TRUE(FindReverts(&applied, {{"d", Fixture::Deployment(5, 8)}}, {f.Planned(5, 8)}).empty());
  // No record yet (a new pipeline): nothing to compare with.
  EXPECT_TRUE(FindReverts(nullptr, {{"d", Fixture::Deployment(5, 8)}}, {f.Planned(3, 8)}).empty());
  // A record of other Deployments: none to compare with either.
  const model::AppliedPlan other = {.plan = {.tasks = {{.replicas = 3}}}, .deployments = {"e"}};
  EXPECT_TRUE(FindReverts(&other, {{"d", Fixture::Deployment(5, 8)}}, {f.Planned(3, 8)}).empty());
}

// The plan is read back from the cluster (api::ReadStatus): whatever a status holds, the reverts
// and the diff read what could be read of it.
TEST(FindReverts, AMalformedRecordIsReadAsFarAsItGoes) {
  const Fixture f;
  const Deployments now = {{"d", Fixture::Deployment(7, 16)}};
  for (const json& plan :
       {json("text"), json{{"tasks", "x"}}, json{{"tasks", {1, "two", nullptr}}},
        json{{"tasks", {{{"deployment", 3}, {"replicas", "3"}, {"batchSize", 1e300}}}}},
        json{{"tasks", {{{"deployment", "d"}, {"replicas", "7"}, {"batchSize", 1e300}}}}}}) {
    std::vector<std::string> dropped;
    const model::PipelineStatus status = api::ReadStatus({{"plan", plan}}, "", &dropped);
    EXPECT_FALSE(dropped.empty()) << plan;
    const model::AppliedPlan* applied = status.plan ? &*status.plan : nullptr;
    EXPECT_NO_THROW(FindReverts(applied, now, {f.Planned(3, 8)})) << plan;
    EXPECT_NO_THROW(PlanDiff(applied, Fixture::Applied(3, 8), optimizer::Placement::kOneClass))
        << plan;
  }
}

TEST(PlanDiff, LabelsDeploymentsTheWayTheOptimizerPlacesThem) {
  const model::AppliedPlan before = {.plan = {.tasks = {{.replicas = 1, .batch_size = 4}}},
                                     .deployments = {"a"}};
  const model::AppliedPlan after = {.plan = {.tasks = {{.task = "t",
                                                        .variant = "v1",
                                                        .hardware_class = "gpu",
                                                        .replicas = 2,
                                                        .batch_size = 4},
                                                       {.task = "t",
                                                        .variant = "v2",
                                                        .hardware_class = "cpu",
                                                        .replicas = 1,
                                                        .batch_size = 1}}},
                                    .deployments = {"a", "b"}};
  EXPECT_EQ(PlanDiff(&before, after, optimizer::Placement::kPerVariant),
            "t/v1 1->2 replicas, batch 4->4, t/v2 new: 1 replicas, batch 1");
  EXPECT_EQ(PlanDiff(&before, after, optimizer::Placement::kPerClass),
            "t@gpu 1->2 replicas, batch 4->4, t@cpu new: 1 replicas, batch 1");
  EXPECT_EQ(PlanDiff(&after, after, optimizer::Placement::kPerClass), "");
  // The first plan: every Deployment is new.
  EXPECT_EQ(PlanDiff(nullptr, after, optimizer::Placement::kPerVariant),
            "t/v1 new: 2 replicas, batch 4, t/v2 new: 1 replicas, batch 1");
}

}  // namespace
}  // namespace pipescale::reconciler
