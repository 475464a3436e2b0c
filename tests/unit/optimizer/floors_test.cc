// spec.tasks[].minReplicas on every optimizer's plans over generated pipelines: each task the plan
// runs reaches its floor (or its class's maxReplicas), the cost grows by exactly the added
// replicas' price, nothing else moves, a second application changes nothing, and a plan that meets
// every floor is left as it was.
#include "optimizer/floors.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "api/pipeline_parse.h"
#include "api/workload.h"
#include "optimizer/registry.h"
#include "support/instance_generator.h"
#include "support/plan_checker.h"

namespace pipescale::optimizer {
namespace {

std::map<std::string, int> ReplicasByTask(const model::Plan& plan) {
  std::map<std::string, int> out;
  for (const model::TaskPlan& t : plan.tasks) out[t.task] += t.replicas;
  return out;
}

// The floor `task` can reach in `plan`: its own, or the most its largest entry's class allows.
int Reachable(const model::Pipeline& pipeline, const model::Plan& plan, const model::Task& task) {
  const model::TaskPlan* largest = nullptr;
  int others = 0;
  for (const model::TaskPlan& t : plan.tasks) {
    if (t.task != task.name) continue;
    others += t.replicas;
    if (largest == nullptr || t.replicas > largest->replicas) largest = &t;
  }
  if (largest == nullptr) return 0;
  others -= largest->replicas;
  const auto& hw =
      pipeline.spec.hardware_classes[pipeline.HardwareClassIndex(largest->hardware_class)];
  return std::min(task.min_replicas, others + hw.max_replicas.value_or(task.min_replicas));
}

TEST(ReplicaFloors, EveryOptimizersPlanReachesEachTasksFloorAtItsPrice) {
  std::mt19937 rng(48);
  int raised = 0, plans = 0;
  for (int i = 0; i < 18; ++i) {
    testing::InstanceOptions options{
        .shape = static_cast<testing::Shape>(i % 3),
        .dnns = 2 + i % 3,
        .max_batch = 8,
        .hardware_classes = 1 + i % 2,
        .variants = 1 + i % 2,
        .max_replicas = i % 3 == 0 ? std::optional<int>(3) : std::nullopt};
    testing::Instance inst = testing::Generate(rng(), options);
    for (model::Task& task : inst.pipeline.spec.tasks)
      task.min_replicas = static_cast<int>(rng() % 4);
    for (const Descriptor& d : Optimizers()) {
      if (!api::CheckPlannableBy(inst.pipeline, d.name).empty()) continue;
      const model::Plan before = d.solve(inst.pipeline, inst.workload, {});
      model::Plan after = before;
      ApplyReplicaFloors(inst.pipeline, after);
      ++plans;
      const auto was = ReplicasByTask(before), now = ReplicasByTask(after);
      double added_cost = 0;
      for (const model::Task& task : inst.pipeline.spec.tasks) {
        if (!was.contains(task.name)) {
          EXPECT_FALSE(now.contains(task.name)) << d.name;
          continue;
        }
        const int floor = Reachable(inst.pipeline, before, task);
        EXPECT_EQ(now.at(task.name), std::max(was.at(task.name), floor))
            << d.name << " " << inst.label << " " << task.name;
        raised += now.at(task.name) > was.at(task.name) ? 1 : 0;
      }
      ASSERT_EQ(after.tasks.size(), before.tasks.size());
      for (size_t t = 0; t < after.tasks.size(); ++t) {
        model::TaskPlan same = after.tasks[t];
        const int more = same.replicas - before.tasks[t].replicas;
        EXPECT_GE(more, 0);
        const int hw = inst.pipeline.HardwareClassIndex(same.hardware_class);
        added_cost += more * inst.pipeline.spec.hardware_classes[hw].cost_per_hour;
        same.replicas = before.tasks[t].replicas;
        EXPECT_EQ(same, before.tasks[t]) << d.name << ": only the replicas move";
      }
      EXPECT_NEAR(after.cost_per_hour, before.cost_per_hour + added_cost, 1e-9) << d.name;
      EXPECT_NEAR(after.floor_cost_per_hour, added_cost, 1e-9) << d.name;
      EXPECT_TRUE(testing::CheckBounds(inst.pipeline, after).empty()) << d.name;
      model::Plan again = after;
      ApplyReplicaFloors(inst.pipeline, again);
      EXPECT_EQ(again, after) << d.name << ": a second application changes nothing";
    }
  }
  EXPECT_GT(plans, 60);
  EXPECT_GT(raised, 20);  // the property was put to work
}

// A Kairos or MArk pool's member of the class raised counts the replica too, so the router's
// matcher and the status agree with the Deployments.
TEST(ReplicaFloors, APoolsMemberCountsTheAddedReplicas) {
  model::Plan plan;
  plan.tasks = {{.task = "a", .variant = "v", .hardware_class = "cpu", .replicas = 1}};
  plan.detail = model::PoolPlan{
      .pools = {{.task = "a", .members = {{.hardware_class = "cpu", .replicas = 1}}}}};
  model::Pipeline pipeline;
  pipeline.spec.hardware_classes = {{.name = "cpu", .cost_per_hour = 0.5}};
  pipeline.spec.tasks = {{.name = "a", .min_replicas = 2}};
  ApplyReplicaFloors(pipeline, plan);
  EXPECT_EQ(plan.tasks[0].replicas, 2);
  EXPECT_EQ(plan.pools()->pools[0].members[0].replicas, 2);
  EXPECT_DOUBLE_EQ(plan.cost_per_hour, 0.5);
  EXPECT_DOUBLE_EQ(plan.floor_cost_per_hour, 0.5);
  ASSERT_EQ(plan.report.notes.size(), 1u);
  EXPECT_NE(plan.report.notes[0].find("+$0.500/h"), std::string::npos) << plan.report.notes[0];
}

// A task without a floor that the plan runs on one replica is named once, with what a second
// would cost; a task raised by its floor, or one on two replicas, is not; a pipeline that scales
// to zero accepts its cold starts and is told nothing.
TEST(ReplicaFloors, TasksOnOneReplicaAreNamedWithWhatASecondWouldCost) {
  model::Pipeline pipeline;
  pipeline.spec.hardware_classes = {{.name = "gpu", .cost_per_hour = 0.5, .startup_seconds = 6},
                                    {.name = "cpu", .cost_per_hour = 0.1, .startup_seconds = 2}};
  pipeline.spec.tasks = {
      {.name = "a"}, {.name = "b"}, {.name = "c"}, {.name = "d", .min_replicas = 2}};
  model::Plan plan;
  plan.tasks = {{.task = "a", .variant = "v", .hardware_class = "gpu", .replicas = 1},
                {.task = "b", .variant = "v", .hardware_class = "gpu", .replicas = 1},
                {.task = "b", .variant = "v", .hardware_class = "cpu", .replicas = 1},
                {.task = "c", .variant = "v", .hardware_class = "cpu", .replicas = 1},
                {.task = "d", .variant = "v", .hardware_class = "cpu", .replicas = 1}};
  model::Plan scale_to_zero = plan;
  ApplyReplicaFloors(pipeline, plan);
  ASSERT_EQ(plan.report.notes.size(), 2u) << "d's floor, and the note";
  EXPECT_EQ(plan.report.notes[1],
            "one replica: a, c run one replica each: a restart of one of their pods holds its "
            "task's requests at the door for its start-up (up to 6s), and a pod killed loses what "
            "it held; spec.tasks[].minReplicas: 2 keeps one serving (+$0.600/h in all)");
  const model::Plan once = plan;
  ApplyReplicaFloors(pipeline, plan);
  EXPECT_EQ(plan, once) << "applied twice, the same as once";
  pipeline.spec.scale_to_zero = model::ScaleToZero{};
  ApplyReplicaFloors(pipeline, scale_to_zero);
  EXPECT_EQ(scale_to_zero.report.notes.size(), 1u) << "d's floor only";
}

}  // namespace
}  // namespace pipescale::optimizer
