#include "optimizer/baselines.h"

#include <gtest/gtest.h>

#include "optimizer/problem.h"

namespace pipescale::optimizer {
namespace {

// Two DNNs in a chain, both d(b) = 10 + 10b ms, 50 rps, SLO 200 ms, under the papers' mean-value
// latency model (the numbers below are the papers' arithmetic).
model::Pipeline Chain(double slo_ms) {
  model::Pipeline p;
  p.spec.slo.model = model::LatencyModel::kMean;
  p.spec.hardware_classes = {{.name = "cpu", .cost_per_hour = 1}};
  for (const char* name : {"a", "b"}) {
    model::Variant v{.name = "v", .max_batch = 16};
    v.profiles.push_back({.hardware_class = "cpu", .latency = {.quadratic = {0, 10, 10}}});
    p.spec.tasks.push_back({.name = name, .next = {}, .variants = {v}});
  }
  p.spec.tasks[0].next = {{.task = "b"}};
  p.spec.paths.push_back({.name = "ab", .tasks = {"a", "b"}, .slo_ms = slo_ms});
  return p;
}

TEST(Ds2, NeverBatches) {
  const Problem problem = Compile(Chain(200), {{{"ab", 50}}});
  const Solution s = SolveDs2(problem);
  for (const Choice& c : s.assignment) {
    EXPECT_EQ(c.batch, 1);
    EXPECT_EQ(c.replicas, 1);  // 50 rps * 20 ms = 1 replica
  }
  EXPECT_EQ(s.status, model::SolveStatus::kFeasible);
}

TEST(Inferline, GrowsBatchesUntilTheSloBinds) {
  // l(b) = 10 + 10b + 20(b - 1) = 30b - 10 per DNN; two DNNs within 200 ms.
  const Problem problem = Compile(Chain(200), {{{"ab", 50}}});
  const Solution s = SolveInferline(problem);
  EXPECT_EQ(s.status, model::SolveStatus::kFeasible);
  EXPECT_LE(RouteLatencyMs(problem, s.assignment, 0), 200 + 1e-9);
  // No single DNN can raise its batch any further.
  for (size_t d = 0; d < 2; ++d) {
    Assignment bigger = s.assignment;
    bool raised = false;
    for (const Choice& c : problem.dnns[d].choices) {
      if (c.batch == s.assignment[d].batch + 1) {
        bigger[d] = c;
        raised = true;
      }
    }
    if (raised) {
      EXPECT_FALSE(MeetsSlos(problem, bigger));
    }
  }
}

TEST(Grandslam, SplitsTheSloByIntensity) {
  // Equal intensities: each DNN gets 100 ms, so 30b - 10 <= 100 gives b = 3.
  const Problem problem = Compile(Chain(200), {{{"ab", 50}}});
  const Solution s = SolveGrandslam(problem);
  EXPECT_EQ(s.assignment[0].batch, 3);
  EXPECT_EQ(s.assignment[1].batch, 3);
}

TEST(Baselines, ReportMissedSlosAsInfeasible) {
  const Problem problem = Compile(Chain(30), {{{"ab", 50}}});
  const Solution s = SolveDs2(problem);
  EXPECT_EQ(s.status, model::SolveStatus::kInfeasible);
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_EQ(s.notes[0], "path ab: predicted 40.0 ms exceeds its SLO of 30.0 ms");
}

}  // namespace
}  // namespace pipescale::optimizer
