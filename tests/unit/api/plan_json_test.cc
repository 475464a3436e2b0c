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
                 .objective = 3,
                 .solve_ms = 0.25,
                 .notes = {"n"}};
  const auto j = nlohmann::json::parse(PlanToJson(plan));
  EXPECT_EQ(j["status"], "Optimal");
  EXPECT_EQ(j["optimizer"], "fa2");
  EXPECT_EQ(j["objective"], 3);
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

}  // namespace
}  // namespace pipescale::api
