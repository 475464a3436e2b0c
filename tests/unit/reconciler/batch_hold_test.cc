#include "reconciler/batch_hold.h"

#include <gtest/gtest.h>

#include "api/pipeline_parse.h"

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
json Deployment(bool rolled) {
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
        {"updatedReplicas", rolled ? 3 : 1}}}};
}

TEST(RollingOut, UntilEveryPodRunsTheNewTemplate) {
  EXPECT_FALSE(RollingOut(Deployment(true)));
  EXPECT_TRUE(RollingOut(Deployment(false)));
  json unseen = Deployment(true);
  unseen["metadata"]["generation"] = 3;  // changed, the controller has not acted yet
  EXPECT_TRUE(RollingOut(unseen));
  json created = Deployment(true);  // just created: nothing to restart
  created.erase("status");
  EXPECT_FALSE(RollingOut(created));
}

struct Case {
  bool rolled;
  std::optional<int> placeable;  // the class's room; nullopt: capacity unknown
  double latency_ms;             // measured on the path (SLO 500 ms)
  bool held;
};

TEST(HoldBatches, WaitForTheRolloutOrTheRoomUnlessTheSloIsMissed) {
  const model::Pipeline p = OneTask();
  for (const Case& c : {Case{true, std::nullopt, 100, false}, Case{false, std::nullopt, 100, true},
                        Case{false, std::nullopt, 900, false}, Case{true, 0, 100, true},
                        Case{true, 2, 100, false}, Case{true, 0, 900, false}}) {
    SCOPED_TRACE(testing::Message() << "rolled " << c.rolled << " room " << c.placeable.value_or(-1)
                                    << " latency " << c.latency_ms);
    std::vector<PlannedDeployment> planned = {{.task = &p.spec.tasks[0],
                                               .variant = &p.spec.tasks[0].variants[0],
                                               .hardware_class = &p.spec.hardware_classes[0],
                                               .name = "shop-detect-v-cpu",
                                               .batch_size = 8}};
    std::optional<ClusterCapacity> capacity;
    if (c.placeable) {
      capacity = ClusterCapacity{.classes = {{.hardware_class = "cpu", .placeable = *c.placeable}}};
    }
    const auto held =
        HoldBatchesDuringRollouts(p, {{"shop-detect-v-cpu", Deployment(c.rolled)}},
                                  {.path_latency_ms = {{"p", c.latency_ms}}}, capacity, planned);
    EXPECT_EQ(held.size(), c.held ? 1u : 0u);
    EXPECT_EQ(planned[0].batch_size, c.held ? 4 : 8);
  }
}

}  // namespace
}  // namespace pipescale::reconciler
