// Loki's routing and dropping in the router, against the plan's tables: requests split as the
// tables say, and a request that falls behind is let go, dropped or rerouted as each policy of
// the paper's ablation has it.
#include "router/loki.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "api/pipeline_parse.h"

namespace pipescale::router {
namespace {

using Kind = Verdict::Kind;

model::Pipeline Pipeline() {
  return *api::ParsePipeline(R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: traffic}
spec:
  hardwareClasses: [{name: gpu}]
  tasks:
    - name: detect
      next: [{task: classify}]
      variants:
        - {name: big, accuracy: 0.9, profiles: [{hardwareClass: gpu, latencyMs: {quadratic: {c: 40}}}]}
        - {name: small, accuracy: 0.6, profiles: [{hardwareClass: gpu, latencyMs: {quadratic: {c: 10}}}]}
    - name: classify
      variants:
        - {name: b7, accuracy: 0.95, profiles: [{hardwareClass: gpu, latencyMs: {quadratic: {c: 30}}}]}
        - {name: b3, accuracy: 0.85, profiles: [{hardwareClass: gpu, latencyMs: {quadratic: {c: 15}}}]}
        - {name: b0, accuracy: 0.7, profiles: [{hardwareClass: gpu, latencyMs: {quadratic: {c: 5}}}]}
  paths: [{name: cars, tasks: [detect, classify], sloMs: 200}]
)")
              .pipeline;
}

model::AccuracyScalingPlan Plan() {
  model::AccuracyScalingPlan plan;
  plan.routing = {{"cars", "detect", "", {{"big", 0.7}, {"small", 0.3}}},
                  {"cars", "classify", "big", {{"b7", 1}}},
                  // Rounded in the ConfigMap: 0.33 + 0.33 + 0.33 is not 1.
                  {"cars", "classify", "small", {{"b7", 0.33}, {"b3", 0.33}, {"b0", 0.33}}}};
  plan.backups = {{"classify", "b0", 20}, {"classify", "b3", 5}, {"classify", "b7", 0}};
  plan.drop_budget_ms = {{"detect/big", 80},
                         {"detect/small", 20},
                         {"classify/b7", 60},
                         {"classify/b3", 30},
                         {"classify/b0", 10}};
  return plan;
}

// The property: over many requests each variant's share is its table's fraction (normalised).
TEST(Loki, RequestsSplitAsTheTablesSay) {
  const LokiTables tables(Plan(), Pipeline());
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  std::map<std::string, int> first, after_small;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    ++first[tables.Route("cars", "detect", "", u(rng))];
    ++after_small[tables.Route("cars", "classify", "small", u(rng))];
  }
  EXPECT_NEAR(first["big"] / double(n), 0.7, 0.01);
  EXPECT_NEAR(first["small"] / double(n), 0.3, 0.01);
  for (const char* v : {"b7", "b3", "b0"}) EXPECT_NEAR(after_small[v] / double(n), 1 / 3.0, 0.01);
  EXPECT_EQ(tables.Route("cars", "classify", "big", 0.999), "b7");
  // No table: any pod of the task serves.
  EXPECT_EQ(tables.Route("trucks", "detect", "", 0.5), "");
}

TEST(Loki, BackupsComeMostAccurateFirstAndOnlyWithRoomLeft) {
  const LokiTables tables(Plan(), Pipeline());
  EXPECT_EQ(tables.Backups("classify"), (std::vector<std::string>{"b3", "b0"}));
  EXPECT_TRUE(tables.Backups("detect").empty());
  EXPECT_EQ(tables.BudgetMs("classify", "b3"), 30);
  EXPECT_EQ(tables.BudgetMs("classify", "nope"), -1);
}

TEST(Loki, EachPolicyTreatsALateRequestAsThePaperSays) {
  const LokiTables tables(Plan(), Pipeline());
  // On time: detect/big took 50 of its 80 ms, 150 ms left for classify/b7's 60.
  for (auto p :
       {DropPolicy::kNone, DropPolicy::kLastTask, DropPolicy::kPerTask, DropPolicy::kReroute}) {
    EXPECT_EQ(Decide(tables, p, "classify", "b7", 50, 80, 150, true),
              (Verdict{Kind::kGo, "b7", ""}));
  }
  // 25 ms over detect's budget, still 95 ms left: per-task drops it; rerouting finds b3
  // (30 ms <= 60 - 25), the most accurate backup fast enough; the others send it on.
  EXPECT_EQ(Decide(tables, DropPolicy::kNone, "classify", "b7", 105, 80, 95, true).kind, Kind::kGo);
  EXPECT_EQ(Decide(tables, DropPolicy::kLastTask, "classify", "b7", 105, 80, 95, true).kind,
            Kind::kGo);
  EXPECT_EQ(Decide(tables, DropPolicy::kPerTask, "classify", "b7", 105, 80, 95, true),
            (Verdict{Kind::kDrop, "", "per-task budget"}));
  EXPECT_EQ(Decide(tables, DropPolicy::kReroute, "classify", "b7", 105, 80, 95, true),
            (Verdict{Kind::kReroute, "b3", "behind"}));
  // 45 ms over: only b0 (10 ms <= 60 - 45) makes it up.
  EXPECT_EQ(Decide(tables, DropPolicy::kReroute, "classify", "b7", 125, 80, 75, true).variant,
            "b0");
  // 55 ms over: no backup is fast enough, so it is dropped rather than served late.
  EXPECT_EQ(Decide(tables, DropPolicy::kReroute, "classify", "b7", 135, 80, 65, true),
            (Verdict{Kind::kDrop, "", "no faster backup"}));
  // On budget but the deadline is near: 40 ms left for b7's 60 at the last task.
  EXPECT_EQ(Decide(tables, DropPolicy::kLastTask, "classify", "b7", 50, 80, 40, true),
            (Verdict{Kind::kDrop, "", "last task"}));
  EXPECT_EQ(Decide(tables, DropPolicy::kReroute, "classify", "b7", 50, 80, 40, true).variant, "b3");
  EXPECT_EQ(Decide(tables, DropPolicy::kLastTask, "classify", "b7", 50, 80, 40, false).kind,
            Kind::kGo);
}

// Properties over many late requests: rerouting never drops what per-task dropping would
// serve, and whatever it reroutes to fits in what the request has left.
TEST(Loki, ReroutingDropsNoMoreThanPerTaskAndItsChoicesFit) {
  const LokiTables tables(Plan(), Pipeline());
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> spent(0, 200), left(0, 200);
  for (int i = 0; i < 10000; ++i) {
    const double s = spent(rng), r = left(rng);
    const Verdict per_task = Decide(tables, DropPolicy::kPerTask, "classify", "b7", s, 80, r, true);
    const Verdict reroute = Decide(tables, DropPolicy::kReroute, "classify", "b7", s, 80, r, true);
    if (per_task.kind == Kind::kGo) {
      EXPECT_EQ(reroute.kind, Kind::kGo) << s << " " << r;
    }
    if (reroute.kind == Kind::kReroute) {
      EXPECT_LE(tables.BudgetMs("classify", reroute.variant), r) << s << " " << r;
      EXPECT_LE(tables.BudgetMs("classify", reroute.variant), 60 - std::max(0.0, s - 80));
    }
  }
}

}  // namespace
}  // namespace pipescale::router
