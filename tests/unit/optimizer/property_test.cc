// Property tests over generated instances: every plan is checked by the independent checker,
// FA2 against the exact optimum and the baselines, the exact solver against brute force; under
// the tail latency model (the default) and the papers' mean-value one alike.
#include <gtest/gtest.h>

#include <cstdio>

#include "optimizer/baselines.h"
#include "optimizer/exact.h"
#include "optimizer/fa2.h"
#include "optimizer/problem.h"
#include "support/brute_force.h"
#include "support/instance_generator.h"
#include "support/plan_checker.h"

namespace pipescale::optimizer {
namespace {

using model::SolveStatus;
using testing::CheckPlan;

constexpr int kInstances = 600;

bool Feasible(SolveStatus s) { return s == SolveStatus::kOptimal || s == SolveStatus::kFeasible; }

std::string Describe(const std::vector<std::string>& violations) {
  std::string out;
  for (const auto& v : violations) out += "\n  " + v;
  return out;
}

class Fa2Property : public ::testing::TestWithParam<model::LatencyModel> {};
class ExactProperty : public ::testing::TestWithParam<model::LatencyModel> {};

std::string ModelName(const ::testing::TestParamInfo<model::LatencyModel>& info) {
  return info.param == model::LatencyModel::kTail ? "Tail" : "Mean";
}

TEST_P(Fa2Property, FeasibleNeverWorseThanBaselinesAndMostlyOptimal) {
  auto suite = testing::GenerateSuite(kInstances, 20221);
  for (auto& inst : suite) inst.pipeline.spec.slo.model = GetParam();
  int feasible = 0, fa2_optimal = 0, paper_optimal = 0, infeasible = 0;
  long fa2_total = 0, exact_total = 0;
  long baseline_total[3] = {0, 0, 0};
  long baseline_fa2_total[3] = {0, 0, 0};
  int baseline_feasible[3] = {0, 0, 0};

  for (const auto& inst : suite) {
    SCOPED_TRACE(inst.label);
    const Problem problem = Compile(inst.pipeline, inst.workload);
    const Solution exact = SolveExact(problem);
    ASSERT_NE(exact.status, SolveStatus::kTimeLimit);
    Fa2Trace trace;
    const Solution fa2 = SolveFa2(problem, {}, &trace);
    const model::Plan fa2_plan = ToPlan(inst.pipeline, problem, fa2, "fa2");

    if (exact.status == SolveStatus::kInfeasible) {
      ++infeasible;
      EXPECT_EQ(fa2.status, SolveStatus::kInfeasible);
      EXPECT_FALSE(fa2.notes.empty());
      continue;
    }
    ++feasible;
    const model::Plan exact_plan = ToPlan(inst.pipeline, problem, exact, "exact");
    EXPECT_TRUE(CheckPlan(inst.pipeline, inst.workload, exact_plan).empty())
        << Describe(CheckPlan(inst.pipeline, inst.workload, exact_plan));

    // FA2 finds a feasible plan whenever one exists, and it is valid.
    ASSERT_TRUE(Feasible(fa2.status)) << "fa2 missed a feasible plan";
    const auto violations = CheckPlan(inst.pipeline, inst.workload, fa2_plan);
    EXPECT_TRUE(violations.empty()) << Describe(violations);
    EXPECT_GE(fa2_plan.TotalReplicas(), exact_plan.TotalReplicas()) << "exact is not optimal";
    if (fa2.status == SolveStatus::kOptimal) {
      EXPECT_EQ(Total(fa2.assignment), Total(exact.assignment)) << "fa2 claims a false optimum";
    }
    fa2_optimal += fa2_plan.TotalReplicas() == exact_plan.TotalReplicas();
    paper_optimal += trace.paper_objective.replicas == exact_plan.TotalReplicas();
    fa2_total += fa2_plan.TotalReplicas();
    exact_total += exact_plan.TotalReplicas();

    // Never worse than a baseline whose plan meets the SLOs.
    const Solution baselines[3] = {SolveDs2(problem), SolveInferline(problem),
                                   SolveGrandslam(problem)};
    for (int b = 0; b < 3; ++b) {
      if (baselines[b].status != SolveStatus::kFeasible) continue;
      const model::Plan plan = ToPlan(inst.pipeline, problem, baselines[b], "baseline");
      EXPECT_TRUE(CheckPlan(inst.pipeline, inst.workload, plan).empty()) << "baseline " << b;
      EXPECT_LE(fa2_plan.TotalReplicas(), plan.TotalReplicas()) << "baseline " << b << " wins";
      ++baseline_feasible[b];
      baseline_total[b] += plan.TotalReplicas();
      baseline_fa2_total[b] += fa2_plan.TotalReplicas();
    }
  }

  const double share = static_cast<double>(fa2_optimal) / feasible;
  std::printf(
      "fa2 equals exact on %d of %d feasible instances (%.2f%%); the paper's DP alone "
      "(Eq. 4 split, no repair): %.2f%%; %d infeasible instances detected\n",
      fa2_optimal, feasible, 100.0 * share, 100.0 * paper_optimal / feasible, infeasible);
  std::printf("replicas: fa2 %ld, exact %ld (fa2/exact %.4f)\n", fa2_total, exact_total,
              static_cast<double>(fa2_total) / exact_total);
  const char* names[3] = {"ds2", "inferline", "grandslam"};
  for (int b = 0; b < 3; ++b) {
    std::printf("%-10s feasible on %d instances, replicas %ld vs fa2 %ld (%.3fx)\n", names[b],
                baseline_feasible[b], baseline_total[b], baseline_fa2_total[b],
                static_cast<double>(baseline_total[b]) / std::max(1L, baseline_fa2_total[b]));
  }
  EXPECT_GT(feasible, kInstances / 2) << "the generator should mostly produce feasible instances";
  EXPECT_GT(infeasible, 0) << "the generator should also produce infeasible instances";
  EXPECT_GE(share, 0.99);
}

TEST_P(ExactProperty, EqualsBruteForceOnSmallInstances) {
  int compared = 0;
  for (int i = 0; i < 150; ++i) {
    const testing::InstanceOptions options{.shape = static_cast<testing::Shape>(i % 3),
                                           .dnns = 2 + i % 3,
                                           .max_batch = i % 2 ? 4 : 8,
                                           .hardware_classes = 1 + (i % 4 == 3)};
    auto inst = testing::Generate(9000 + i, options);
    inst.pipeline.spec.slo.model = GetParam();
    SCOPED_TRACE(inst.label);
    const auto brute = testing::BruteForce(inst.pipeline, inst.workload);
    const Problem problem = Compile(inst.pipeline, inst.workload);
    const Solution exact = SolveExact(problem);
    if (!brute) {
      EXPECT_EQ(exact.status, SolveStatus::kInfeasible);
      continue;
    }
    ASSERT_EQ(exact.status, SolveStatus::kOptimal);
    const Objective total = Total(exact.assignment);
    EXPECT_EQ(total.replicas, brute->replicas);
    EXPECT_NEAR(total.cost_micro / 1e6, brute->cost_per_hour, 1e-5);
    ++compared;
  }
  EXPECT_GT(compared, 100);
}

INSTANTIATE_TEST_SUITE_P(LatencyModels, Fa2Property,
                         ::testing::Values(model::LatencyModel::kTail, model::LatencyModel::kMean),
                         ModelName);
INSTANTIATE_TEST_SUITE_P(LatencyModels, ExactProperty,
                         ::testing::Values(model::LatencyModel::kTail, model::LatencyModel::kMean),
                         ModelName);

}  // namespace
}  // namespace pipescale::optimizer
