#include "optimizer/fa2.h"

#include <gtest/gtest.h>

#include <set>

#include "api/pipeline_parse.h"
#include "api/workload.h"
#include "optimizer/exact.h"
#include "optimizer/registry.h"
#include "support/plan_checker.h"

namespace pipescale::optimizer {
namespace {

using model::SolveStatus;

// One DNN, d(b) = 20 + 5b ms, lambda = 100 rps, SLO 100 ms, under the paper's mean-value latency
// model (the numbers below are the paper's arithmetic).
model::Pipeline SingleDnn(double slo_ms) {
  model::Pipeline p;
  p.spec.slo.model = model::LatencyModel::kMean;
  p.name = "single";
  p.spec.hardware_classes = {{.name = "cpu", .cost_per_hour = 1}};
  model::Variant v{.name = "v", .max_batch = 16};
  v.profiles.push_back({.hardware_class = "cpu", .latency = {.quadratic = {0, 5, 20}}});
  p.spec.tasks.push_back({.name = "m", .next = {}, .variants = {v}});
  p.spec.paths.push_back({.name = "only", .tasks = {"m"}, .slo_ms = slo_ms});
  return p;
}

TEST(Fa2, QueueTermAndSmallestBatchTieBreak) {
  // l(b) = 20 + 5b + 10(b - 1) ms <= 100 allows b <= 6; one replica suffices from b = 4
  // (h(4) = 4 / 40 ms = 100 rps), so the delta tie-break picks b = 4, not 5 or 6.
  const model::Plan plan = Solve(SingleDnn(100), {{{"only", 100}}}, "fa2");
  ASSERT_EQ(plan.tasks.size(), 1u);
  EXPECT_EQ(plan.tasks[0].batch_size, 4);
  EXPECT_EQ(plan.tasks[0].replicas, 1);
  EXPECT_DOUBLE_EQ(plan.tasks[0].latency_ms, 40);
  EXPECT_DOUBLE_EQ(plan.tasks[0].queue_ms, 30);
  EXPECT_EQ(plan.report.status, SolveStatus::kOptimal);
}

TEST(Fa2, TightSloForcesSmallBatchesAndMoreReplicas) {
  // SLO 40 ms: l(b) = 10 + 15b <= 40 allows b <= 2; n(2) = ceil(100 * 30 / 2000) = 2.
  const model::Plan plan = Solve(SingleDnn(40), {{{"only", 100}}}, "fa2");
  EXPECT_EQ(plan.tasks[0].batch_size, 2);
  EXPECT_EQ(plan.tasks[0].replicas, 2);
}

TEST(Fa2, SloBelowFastestLatencyIsInfeasibleAndNamesThePath) {
  const model::Plan plan = Solve(SingleDnn(20), {{{"only", 100}}}, "fa2");
  EXPECT_EQ(plan.report.status, SolveStatus::kInfeasible);
  ASSERT_EQ(plan.report.notes.size(), 1u);
  EXPECT_EQ(plan.report.notes[0], "path only: SLO 20.0 ms is below the fastest possible 25.0 ms");
  EXPECT_EQ(plan.tasks[0].batch_size, 1);  // best effort: the fastest plan
}

TEST(Fa2, NoTrafficKeepsOneReplicaAtBatchOne) {
  const model::Plan plan = Solve(SingleDnn(100), {{{"only", 0}}}, "fa2");
  EXPECT_EQ(plan.tasks[0].replicas, 1);
  EXPECT_EQ(plan.tasks[0].batch_size, 1);
}

model::Pipeline PaperApp(const char* which) {
  auto parsed =
      api::ParsePipelineFile(std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/" + which);
  EXPECT_TRUE(parsed.errors.empty());
  return *parsed.pipeline;
}

TEST(Fa2, TransformationLeavesNoIngressAggregatorOnThePaperApp) {
  // The paper's setting: its latency model, at a rate its CPU application's 40 replicas serve
  // (the tail model needs more than 40 there).
  model::Pipeline app = PaperApp("fa2-cpu.yaml");
  app.spec.slo.model = model::LatencyModel::kMean;
  const auto workload = api::MakeWorkload(app, 27.0, {});
  ASSERT_TRUE(workload.ok());
  const Problem problem = Compile(app, *workload);
  Fa2Trace trace;
  const Solution s = SolveFa2(problem, {}, &trace);
  // quan has three predecessors (alpr, sumr, autt): two of its edges go, nothing else.
  ASSERT_EQ(trace.removed_edges.size(), 2u);
  const int quan = app.TaskIndex("quan");
  std::set<int> from;
  for (auto [u, v] : trace.removed_edges) {
    EXPECT_EQ(v, quan);
    from.insert(u);
  }
  EXPECT_EQ(from.size(), 2u);
  const auto violations = testing::CheckPlan(app, *workload, ToPlan(app, problem, s, "fa2"));
  EXPECT_TRUE(violations.empty()) << (violations.empty() ? "" : violations[0]);
  EXPECT_GT(trace.dp_runs, 1);  // the split was searched, not only Eq. 4's
}

TEST(Fa2, MatchesExactOnThePaperAppAcrossRates) {
  for (const char* file : {"fa2-cpu.yaml", "fa2-gpu.yaml"}) {
    const model::Pipeline app = PaperApp(file);
    for (double rate = 6; rate <= 60; rate += 6) {
      SCOPED_TRACE(std::string(file) + " at " + std::to_string(rate) + " rps");
      const auto workload = api::MakeWorkload(app, rate, {});
      const model::Plan fa2 = Solve(app, *workload, "fa2");
      const model::Plan exact = Solve(app, *workload, "exact");
      EXPECT_EQ(fa2.TotalReplicas(), exact.TotalReplicas());
      // Beyond the class's maxReplicas the SLOs cannot all hold: the plan stops at the limit
      // and says so.
      const int limit = *app.spec.hardware_classes[0].max_replicas;
      if (fa2.report.status == model::SolveStatus::kInfeasible) {
        EXPECT_EQ(fa2.TotalReplicas(), limit);
        ASSERT_FALSE(fa2.report.reasons.empty());
        EXPECT_NE(fa2.report.reasons.back().find("allows " + std::to_string(limit)),
                  std::string::npos);
      } else {
        const auto violations = testing::CheckPlan(app, *workload, fa2);
        EXPECT_TRUE(violations.empty()) << (violations.empty() ? "" : violations[0]);
      }
    }
  }
}

TEST(Fa2, RepairAndLocalMovesNeverHurt) {
  const model::Pipeline app = PaperApp("fa2-gpu.yaml");
  for (double rate : {10.0, 33.0, 57.0}) {
    const auto workload = api::MakeWorkload(app, rate, {});
    const Problem problem = Compile(app, *workload);
    Fa2Trace trace;
    const Solution full = SolveFa2(problem, {}, &trace);
    const Solution paper = SolveFa2(problem, {.repair_split = false, .local_improvement = false});
    EXPECT_EQ(Total(paper.assignment), trace.paper_objective);
    EXPECT_LE(Total(full.assignment), Total(paper.assignment));
  }
}

}  // namespace
}  // namespace pipescale::optimizer
