// Finding the changes made outside the operator, and reading back a status anyone may write.
#include "reconciler/writes.h"

#include <gtest/gtest.h>

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
  static json Deployment(int replicas, int batch) {
    return {{"metadata", {{"name", "d"}}},
            {"spec",
             {{"replicas", replicas},
              {"template",
               {{"spec",
                 {{"containers",
                   {{{"name", "m"},
                     {"env",
                      {{{"name", "MAX_BATCH_SIZE"}, {"value", std::to_string(batch)}}}}}}}}}}}}}};
  }
  static json Applied(int replicas, int batch) {
    return {{"tasks", {{{"deployment", "d"}, {"replicas", replicas}, {"batchSize", batch}}}}};
  }
};

TEST(FindReverts, NamesEachFieldChangedOutsideTheOperator) {
  const Fixture f;
  const Deployments now = {{"d", Fixture::Deployment(7, 16)}};
  const auto reverts = FindReverts(Fixture::Applied(3, 8), now, {f.Planned(3, 8)});
  ASSERT_EQ(reverts.size(), 2u);
  EXPECT_EQ(reverts[0], (Revert{"d", "spec.replicas", 7, 3}));
  EXPECT_EQ(reverts[1].field, "spec.template.spec.containers[0].env[MAX_BATCH_SIZE]");
  EXPECT_NE(reverts[0].Message().find("changed to 7 outside the operator; set back to 3"),
            std::string::npos);
}

TEST(FindReverts, APlanChangeOrAnEditThePlanAgreesWithIsNone) {
  const Fixture f;
  // The operator set 3 and now asks for 5: its own change.
  EXPECT_TRUE(
      FindReverts(Fixture::Applied(3, 8), {{"d", Fixture::Deployment(3, 8)}}, {f.Planned(5, 8)})
          .empty());
  // Someone set 5, which is what the plan wants now: nothing is put back.
  EXPECT_TRUE(
      FindReverts(Fixture::Applied(3, 8), {{"d", Fixture::Deployment(5, 8)}}, {f.Planned(5, 8)})
          .empty());
  // No record yet (a new pipeline): nothing to compare with.
  EXPECT_TRUE(
      FindReverts(json::object(), {{"d", Fixture::Deployment(5, 8)}}, {f.Planned(3, 8)}).empty());
}

// The status is read back from the cluster: fields of the wrong type read as absent.
TEST(FindReverts, AMalformedStatusIsReadAsNoRecord) {
  const Fixture f;
  const Deployments now = {{"d", Fixture::Deployment(7, 16)}};
  for (const json& applied :
       {json("text"), json{{"tasks", "x"}}, json{{"tasks", {1, "two", nullptr}}},
        json{{"tasks", {{{"deployment", 3}, {"replicas", "3"}, {"batchSize", 1e300}}}}}}) {
    EXPECT_NO_THROW(FindReverts(applied, now, {f.Planned(3, 8)})) << applied;
    EXPECT_NO_THROW(
        PlanDiff(applied, json{{"tasks", json::array()}}, optimizer::Placement::kOneClass))
        << applied;
  }
}

TEST(PlanDiff, LabelsDeploymentsTheWayTheOptimizerPlacesThem) {
  const json before = {{"tasks", {{{"deployment", "a"}, {"replicas", 1}, {"batchSize", 4}}}}};
  const json after = {{"tasks",
                       {{{"task", "t"},
                         {"variant", "v1"},
                         {"hardwareClass", "gpu"},
                         {"deployment", "a"},
                         {"replicas", 2},
                         {"batchSize", 4}},
                        {{"task", "t"},
                         {"variant", "v2"},
                         {"hardwareClass", "cpu"},
                         {"deployment", "b"},
                         {"replicas", 1},
                         {"batchSize", 1}}}}};
  EXPECT_EQ(PlanDiff(before, after, optimizer::Placement::kPerVariant),
            "t/v1 1->2 replicas, batch 4->4, t/v2 new: 1 replicas, batch 1");
  EXPECT_EQ(PlanDiff(before, after, optimizer::Placement::kPerClass),
            "t@gpu 1->2 replicas, batch 4->4, t@cpu new: 1 replicas, batch 1");
  EXPECT_EQ(PlanDiff(after, after, optimizer::Placement::kPerClass), "");
}

}  // namespace
}  // namespace pipescale::reconciler
