#include "api/plan_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace pipescale::api {
namespace {

TEST(PlanToJson, FollowsTheCliContract) {
  model::Plan plan;
  plan.tasks.push_back({.task = "detect",
                        .variant = "yolo",
                        .hardware_class = "gpu",
                        .replicas = 3,
                        .batch_size = 4,
                        .latency_ms = 20.5,
                        .queue_ms = 7.5});
  plan.paths.push_back({.name = "p", .slo_ms = 100, .predicted_latency_ms = 28});
  plan.report = {.optimizer = "fa2",
                 .status = model::SolveStatus::kOptimal,
                 .objective = {3, "replicas"},
                 .solve_ms = 0.25,
                 .notes = {"n"}};
  const auto j = nlohmann::json::parse(PlanToJson(plan));
  EXPECT_EQ(j["status"], "Optimal");
  EXPECT_EQ(j["optimizer"], "fa2");
  EXPECT_EQ(j["objective"], 3);
  EXPECT_EQ(j["objectiveUnit"], "replicas");
  EXPECT_EQ(j["solveMs"], 0.25);
  EXPECT_EQ(j["tasks"][0]["task"], "detect");
  EXPECT_EQ(j["tasks"][0]["variant"], "yolo");
  EXPECT_EQ(j["tasks"][0]["hardwareClass"], "gpu");
  EXPECT_EQ(j["tasks"][0]["replicas"], 3);
  EXPECT_EQ(j["tasks"][0]["batchSize"], 4);
  EXPECT_EQ(j["tasks"][0]["latencyMs"], 20.5);
  EXPECT_EQ(j["tasks"][0]["queueMs"], 7.5);
  EXPECT_EQ(j["paths"][0]["name"], "p");
  EXPECT_EQ(j["paths"][0]["sloMs"], 100);
  EXPECT_EQ(j["paths"][0]["predictedLatencyMs"], 28);
  const std::string table = PlanToTable(plan);
  EXPECT_NE(table.find("detect"), std::string::npos);
  EXPECT_NE(table.find("yes"), std::string::npos);
}

model::Plan LokiPlan() {
  model::Plan plan;
  plan.tasks.push_back({.task = "t",
                        .variant = "fast",
                        .hardware_class = "gpu",
                        .replicas = 2,
                        .batch_size = 4,
                        .latency_ms = 10.123456,
                        .queue_ms = 10.123456,
                        .load_rps = 99.987654});
  plan.report = {.optimizer = "loki", .objective = {0.912345678, "accuracy"}};
  plan.served_fraction = 0.333333333;
  plan.detail = model::AccuracyScalingPlan{
      .phase = model::Phase::kAccuracyScaling,
      .accuracy = 0.912345678,
      .variant_paths = {{.path = "p", .variants = {"fast"}, .share = 1.0 / 3}},
      .routing = {{.path = "p", .task = "t", .from_variant = "", .to = {{"fast", 1.0 / 3}}}},
      .backups = {{.task = "t", .variant = "fast", .spare_rps = 12.3456}}};
  return plan;
}

// The CLI, the status and the ConfigMap render the same plan with the same keys; rounding
// is the only difference, by one rule (4 decimals for fractions, 2 for quantities).
TEST(PlanToJson, OneRenderingRoundedByOneRule) {
  const model::Plan plan = LokiPlan();
  const auto exact = PlanToJsonValue(plan, {});
  const auto rounded = PlanToJsonValue(plan, {.rounded = true, .report = false});
  EXPECT_EQ(exact["phase"], "AccuracyScaling");
  // No per-task drop budget: the router never read one (it budgets from the path's slack).
  EXPECT_FALSE(exact["tasks"][0].contains("budgetMs"));
  EXPECT_EQ(rounded["tasks"][0]["loadRps"], 99.99);
  EXPECT_EQ(rounded["accuracy"], 0.9123);
  EXPECT_EQ(rounded["servedFraction"], 0.3333);
  EXPECT_EQ(rounded["routing"][0]["to"][0]["fraction"], 0.3333);
  EXPECT_EQ(rounded["backups"][0]["spareRps"], 12.35);
  EXPECT_FALSE(rounded.contains("objective"));  // the status keeps the report in solver
  for (const auto& [key, value] : rounded.items()) {
    EXPECT_TRUE(exact.contains(key)) << key;
  }
  EXPECT_EQ(RoutingToJson(*plan.accuracy_scaling(), true), rounded["routing"]);
}

// Only the part a plan has is rendered: an FA2 plan has no Loki or pool keys.
TEST(PlanToJson, RendersOnlyThePartThePlanHas) {
  model::Plan plan;
  EXPECT_FALSE(PlanToJsonValue(plan, {}).contains("phase"));
  EXPECT_FALSE(PlanToJsonValue(plan, {}).contains("pools"));
  plan.detail = model::PoolPlan{.pools = {{.task = "t", .qos_ms = 50.555555}},
                                .upper_bound_qps = 400,
                                .forecast_rps = {1.234, 5.678},
                                .forecast_step_seconds = 10};
  const auto j = PlanToJsonValue(plan, {.rounded = true});
  EXPECT_FALSE(j.contains("phase"));
  EXPECT_EQ(j["upperBoundQps"], 400);
  EXPECT_EQ(j["forecast"]["rps"][1], 5.68);
  EXPECT_EQ(j["pools"][0]["qosMs"], 50.56);
  EXPECT_EQ(j["pools"], PoolsToJson(*plan.pools(), true));
}

}  // namespace
}  // namespace pipescale::api
