#include "optimizer/exact.h"

#include <gtest/gtest.h>

namespace pipescale::optimizer {
namespace {

// A join: two paths share DNN c, the tighter path decides c's batch.
model::Pipeline Join() {
  model::Pipeline p;
  p.spec.hardware_classes = {{.name = "cpu", .cost_per_hour = 1}};
  for (const char* name : {"a", "b", "c"}) {
    model::Variant v{.name = "v", .max_batch = 8};
    v.profiles.push_back({.hardware_class = "cpu", .latency = {.quadratic = {0, 10, 20}}});
    p.spec.tasks.push_back({.name = name, .next = {}, .variants = {v}});
  }
  p.spec.tasks[0].next = {{.task = "c"}};
  p.spec.tasks[1].next = {{.task = "c"}};
  p.spec.paths.push_back({.name = "ac", .tasks = {"a", "c"}, .slo_ms = 150});
  p.spec.paths.push_back({.name = "bc", .tasks = {"b", "c"}, .slo_ms = 400});
  return p;
}

TEST(Exact, OptimalAndWithinSlos) {
  const Problem problem = Compile(Join(), {{{"ac", 40}, {"bc", 40}}});
  const Solution s = SolveExact(problem);
  ASSERT_EQ(s.status, model::SolveStatus::kOptimal);
  EXPECT_TRUE(MeetsSlos(problem, s.assignment));
  // Exhaustive check over the 8^3 batch combinations.
  long best = 1L << 40;
  Assignment a(3);
  for (const Choice& x : problem.dnns[0].choices) {
    for (const Choice& y : problem.dnns[1].choices) {
      for (const Choice& z : problem.dnns[2].choices) {
        a = {x, y, z};
        if (MeetsSlos(problem, a)) best = std::min(best, Total(a).replicas);
      }
    }
  }
  EXPECT_EQ(Total(s.assignment).replicas, best);
}

TEST(Exact, NodeLimitReportsTimeLimit) {
  const Problem problem = Compile(Join(), {{{"ac", 40}, {"bc", 40}}});
  const Solution s = SolveExact(problem, {.max_nodes = 2});
  EXPECT_EQ(s.status, model::SolveStatus::kTimeLimit);
}

}  // namespace
}  // namespace pipescale::optimizer
