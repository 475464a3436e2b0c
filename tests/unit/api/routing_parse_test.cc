// Reading Loki's routing.json back, as the router does: what the operator writes reads back the
// same, and a ConfigMap edited into nonsense is named field by field without a crash.
#include "api/routing_parse.h"

#include <gtest/gtest.h>

#include <random>

#include "api/deployment.h"
#include "support/mutate.h"

namespace pipescale::api {
namespace {

model::AccuracyScalingPlan Loki() {
  model::AccuracyScalingPlan plan;
  plan.phase = model::Phase::kAccuracyScaling;
  plan.routing = {{"cars", "detect", "", {{"yolov5x", 0.75}, {"yolov5s", 0.25}}},
                  {"cars", "classify", "yolov5x", {{"effnet-b7", 1}}},
                  {"cars", "classify", "yolov5s", {{"effnet-b7", 0.5}, {"effnet-b0", 0.5}}}};
  plan.backups = {{"classify", "effnet-b0", 12.5}};
  plan.drop_budget_ms = {{"detect/yolov5x", 80}, {"classify/effnet-b0", 12.25}};
  return plan;
}

TEST(LokiRouting, WhatTheOperatorWritesReadsBackTheSame) {
  model::Plan plan;
  plan.detail = Loki();
  const auto data = RoutingConfigMapData(plan);
  auto read = ParseLokiRouting(data["routing.json"].get<std::string>());
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->phase, model::Phase::kAccuracyScaling);
  EXPECT_EQ(read->routing, Loki().routing);
  EXPECT_EQ(read->backups, Loki().backups);
  EXPECT_EQ(read->drop_budget_ms, Loki().drop_budget_ms);
}

TEST(LokiRouting, EachMistakeNamesItsField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[]", "routing.json: : must be a JSON object"},
      {R"({"phase": "Fast"})", "routing.json: phase:"},
      {R"({"phase": "HardwareScaling", "tables": [3]})", "tables[0]: must be an object"},
      {R"({"phase": "HardwareScaling", "tables": [{"task": "a"}]})", "tables[0].path"},
      {R"({"phase": "HardwareScaling",
           "tables": [{"path": "p", "task": "a", "to": [{"variant": "v", "fraction": 2}]}]})",
       "tables[0].to[0].fraction: must be a number in [0, 1]"},
      {R"({"phase": "Overloaded", "backups": [{"task": "a", "variant": "v", "spareRps": -1}]})",
       "backups[0].spareRps"},
      {R"({"phase": "Overloaded", "budgetsMs": {"a/v": "soon"}})", "budgetsMs.a/v"},
  };
  for (const auto& [text, expected] : cases) {
    auto r = ParseLokiRouting(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find(expected), std::string::npos) << r.error().message;
  }
}

TEST(LokiRouting, MutatedConfigMapsNeverCrash) {
  model::Plan plan;
  plan.detail = Loki();
  const std::string seed = RoutingConfigMapData(plan)["routing.json"];
  std::mt19937 rng(3);
  int errors = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string text =
        testing::Mutate(seed, rng, 6, [&] { return "{}[]\",:0-.1"[rng() % 11]; });
    auto r = ParseLokiRouting(text);
    if (!r.ok()) {
      ++errors;
      EXPECT_EQ(r.error().message.rfind("routing.json: ", 0), 0u) << r.error().message;
    }
  }
  EXPECT_GT(errors, 1000);
}

}  // namespace
}  // namespace pipescale::api
