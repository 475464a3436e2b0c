// The budget guard on its own: what it holds, what it lets go first, and what it counts.
#include "reconciler/budget_guard.h"

#include <gtest/gtest.h>

namespace pipescale::reconciler {
namespace {

const model::HardwareClass kGpu{.name = "gpu", .cost_per_hour = 1.0};
const model::HardwareClass kCpu{.name = "cpu", .cost_per_hour = 0.2};

PlannedDeployment Slot(const model::HardwareClass& hw, int planned, std::optional<int> current) {
  return {.hardware_class = &hw,
          .name = hw.name,
          .planned = planned,
          .target = planned,
          .current = current,
          .running = current.value_or(0)};
}

TEST(BudgetGuard, WithinTheBudgetChangesNothing) {
  std::vector<PlannedDeployment> planned = {Slot(kCpu, 3, 1), Slot(kGpu, 1, 1)};
  const GuardOutcome out = GuardBudget({.max_replicas = 4, .cost_per_hour = 2}, planned, {});
  EXPECT_FALSE(out.over_budget);
  EXPECT_EQ(out.waiting, 0);
  EXPECT_EQ(planned[0].target, 3);
  EXPECT_EQ(TargetSpend(planned).replicas, 4);
  EXPECT_DOUBLE_EQ(TargetSpend(planned).cost_per_hour, 1.6);
}

// A plan over the budget keeps every scale-out at what runs; a Deployment still to be created
// starts as planned (it would otherwise start with nothing), and scale-ins go ahead.
TEST(BudgetGuard, AnOverBudgetPlanHoldsItsScaleOuts) {
  std::vector<PlannedDeployment> planned = {Slot(kCpu, 6, 2), Slot(kGpu, 0, 1),
                                            Slot(kCpu, 1, std::nullopt)};
  const GuardOutcome out = GuardBudget({.max_replicas = 4}, planned, {});
  EXPECT_TRUE(out.over_budget);
  EXPECT_EQ(planned[0].target, 2);
  EXPECT_EQ(planned[1].target, 0);
  EXPECT_EQ(planned[2].target, 1);
}

// A GPU traded for CPUs under $1.5/h: the new plan costs $0.8/h, but with the GPU still running
// both would cost $1.8/h. The GPU goes first, skipping its scale-down window (its target was
// held at 1 by stabilization); the CPUs wait.
TEST(BudgetGuard, ScaleOutsWaitForTheScaleInsTheyNeed) {
  std::vector<PlannedDeployment> planned = {Slot(kGpu, 0, 1), Slot(kCpu, 4, 0)};
  planned[0].target = 1;  // the scale-down window still holds it
  const GuardOutcome out = GuardBudget({.cost_per_hour = 1.5}, planned, {});
  EXPECT_FALSE(out.over_budget);
  EXPECT_EQ(out.waiting, 1);
  EXPECT_EQ(planned[0].target, 0);
  EXPECT_EQ(planned[1].target, 0);
  // Next time the GPU is gone and the CPUs fit.
  std::vector<PlannedDeployment> next = {Slot(kGpu, 0, 0), Slot(kCpu, 4, 0)};
  EXPECT_EQ(GuardBudget({.cost_per_hour = 1.5}, next, {}).waiting, 0);
  EXPECT_EQ(next[1].target, 4);
}

// The pipeline's Deployments outside the plan still run until they are gone: they count.
TEST(BudgetGuard, DeploymentsOutsideThePlanCount) {
  std::vector<PlannedDeployment> planned = {Slot(kCpu, 3, 1)};
  EXPECT_EQ(GuardBudget({.max_replicas = 4}, planned, {.replicas = 2}).waiting, 1);
  EXPECT_EQ(planned[0].target, 1);
}

// Property: whatever the plan, the guard never raises a target, and unless every Deployment at
// its target or at what runs (whichever is more) fits the budget, no existing Deployment scales
// out: the only replicas added are those of Deployments still to be created.
TEST(BudgetGuard, NeverRaisesATargetAndScalesOutOnlyWithinBudget) {
  for (int seed = 0; seed < 500; ++seed) {
    std::vector<PlannedDeployment> planned;
    for (int k = 0; k < 3; ++k) {
      const int current = (seed * 7 + k * 3) % 5;
      planned.push_back(Slot(k % 2 ? kGpu : kCpu, (seed * 13 + k * 5) % 6, current));
    }
    const auto before = planned;
    const model::Budget budget{.max_replicas = 2 + seed % 9};
    GuardBudget(budget, planned, {});
    int transit = 0;
    for (const auto& p : before) transit += std::max(p.target, p.running);
    for (size_t k = 0; k < planned.size(); ++k) {
      EXPECT_LE(planned[k].target, before[k].target) << seed;
      if (transit > *budget.max_replicas) {
        EXPECT_LE(planned[k].target, *planned[k].current) << seed;
      }
    }
  }
}

}  // namespace
}  // namespace pipescale::reconciler
