// status.observed.dataPlane: what the router's metrics say, rounded, and the accuracy served
// against the planned for a plan that scales accuracy.
#include "reconciler/status.h"

#include <gtest/gtest.h>

#include "api/status_json.h"

namespace pipescale::reconciler {
namespace {

// detect: yolo-x (0.8) and yolo-s (0.6); classify: b7 (0.9) and b0 (0.45).
model::Pipeline TwoTasks() {
  model::Pipeline p;
  p.spec.tasks = {
      {.name = "detect",
       .variants = {{.name = "yolo-x", .accuracy = 0.8}, {.name = "yolo-s", .accuracy = 0.6}}},
      {.name = "classify",
       .variants = {{.name = "b7", .accuracy = 0.9}, {.name = "b0", .accuracy = 0.45}}}};
  return p;
}

// detect serves 3:1 yolo-x (mean 0.75 x 1 + 0.25 x 0.75 = 0.9375 of the best), classify 1:1
// (0.75): served 0.703125; only a Loki plan reports accuracy.
TEST(DataPlaneStatus, TheAccuracyServedWeighsEachVariantByItsCalls) {
  model::DataPlaneSnapshot seen;
  seen.variant_rps = {
      {"detect/yolo-x", 30}, {"detect/yolo-s", 10}, {"classify/b7", 20}, {"classify/b0", 20}};
  seen.drops_rps = {{"per-task budget", 1.23456}};
  seen.spill_share = {{"classify", 0.125}};
  model::Plan loki;
  model::AccuracyScalingPlan scaling;
  scaling.accuracy = 0.8;
  loki.detail = scaling;
  const model::ObservedDataPlane status = DataPlaneStatus(TwoTasks(), loki, seen);
  EXPECT_DOUBLE_EQ(status.served_accuracy.value_or(0), 0.703125);
  EXPECT_DOUBLE_EQ(status.planned_accuracy.value_or(0), 0.8);
  // As written: rounded, so that noise in the router's rates does not rewrite the status.
  const nlohmann::json written = api::StatusToJson(
      {.observed = model::ObservedLoad{.data_plane = status}})["observed"]["dataPlane"];
  EXPECT_DOUBLE_EQ(written["servedAccuracy"].get<double>(), 0.7031);
  EXPECT_DOUBLE_EQ(written["plannedAccuracy"].get<double>(), 0.8);
  EXPECT_DOUBLE_EQ(written["dropsPerSecond"]["per-task budget"].get<double>(), 1.23);
  EXPECT_DOUBLE_EQ(written["spillShare"]["classify"].get<double>(), 0.125);
  EXPECT_FALSE(DataPlaneStatus(TwoTasks(), model::Plan{}, seen).served_accuracy);
  seen.variant_rps.clear();
  EXPECT_FALSE(DataPlaneStatus(TwoTasks(), loki, seen).served_accuracy)
      << "no call answered: nothing to say, not 0";
}

}  // namespace
}  // namespace pipescale::reconciler
