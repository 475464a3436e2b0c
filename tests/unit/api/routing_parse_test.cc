// Reading Loki's routing.json and the pools' pools.json back, as the router does: what the operator
// writes reads back the same, and a ConfigMap edited into nonsense is named field by field without
// a crash.
#include "api/routing_parse.h"

#include <gtest/gtest.h>

#include <random>

#include "api/deployment.h"
#include "api/pipeline_parse.h"
#include "optimizer/registry.h"
#include "support/mutate.h"

namespace pipescale::api {
namespace {

// Each text fails to parse with a message containing its expected part.
template <typename Parse>
void ExpectErrors(const std::vector<std::pair<std::string, std::string>>& cases, Parse parse) {
  for (const auto& [text, expected] : cases) {
    auto r = parse(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find(expected), std::string::npos) << r.error().message;
  }
}

model::AccuracyScalingPlan Loki() {
  model::AccuracyScalingPlan plan;
  plan.phase = model::Phase::kAccuracyScaling;
  plan.routing = {{"cars", "detect", "", {{"yolov5x", 0.75}, {"yolov5s", 0.25}}},
                  {"cars", "classify", "yolov5x", {{"effnet-b7", 1}}},
                  {"cars", "classify", "yolov5s", {{"effnet-b7", 0.5}, {"effnet-b0", 0.5}}}};
  plan.backups = {{"classify", "effnet-b0", 12.5}};
  return plan;
}

TEST(LokiRouting, WhatTheOperatorWritesReadsBackTheSame) {
  model::Plan plan;
  plan.detail = Loki();
  const auto data = RoutingConfigMapData(model::Pipeline{}, plan);
  auto read = ParseLokiRouting(data["routing.json"].get<std::string>());
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->phase, model::Phase::kAccuracyScaling);
  EXPECT_EQ(read->routing, Loki().routing);
  EXPECT_EQ(read->backups, Loki().backups);
}

// The router budgets a late request from its path's remaining slack (routing/loki.h): a
// per-variant drop budget in routing.json would be data no one reads, so none is written.
TEST(LokiRouting, ALokiPlanWritesNoDropBudget) {
  const auto parsed =
      ParsePipelineFile(std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/loki-traffic.yaml");
  ASSERT_TRUE(parsed.pipeline);
  const model::Pipeline& pipeline = *parsed.pipeline;
  for (const double rate : {5.0, 40.0, 400.0}) {
    model::Workload workload;
    for (const model::Path& p : pipeline.spec.paths) workload.path_rates_rps[p.name] = rate;
    const model::Plan plan = optimizer::Solve(pipeline, workload, "loki");
    ASSERT_NE(plan.accuracy_scaling(), nullptr);
    const auto data = RoutingConfigMapData(pipeline, plan);
    const auto routing = nlohmann::json::parse(data["routing.json"].get<std::string>());
    EXPECT_FALSE(routing.contains("budgetsMs")) << routing.dump();
    EXPECT_EQ(routing.dump().find("udget"), std::string::npos) << routing.dump();
  }
}

// A routing.json an older operator wrote (with budgetsMs, of any shape) still reads: a running
// router must not lose its tables to a key it no longer needs.
TEST(LokiRouting, ALegacyDropBudgetIsIgnored) {
  for (const char* budgets : {R"({"detect/v": 80})", R"({"detect/v": "soon"})", "[1]", "7"}) {
    const std::string text = std::string(R"({"phase": "Overloaded", "budgetsMs": )") + budgets +
                             R"(, "tables": [{"path": "p", "task": "detect", "to": [)" +
                             R"({"variant": "v", "fraction": 1}]}]})";
    auto read = ParseLokiRouting(text);
    ASSERT_TRUE(read.ok()) << budgets << ": " << read.error().message;
    EXPECT_EQ(read->phase, model::Phase::kOverloaded);
    ASSERT_EQ(read->routing.size(), 1u);
    EXPECT_EQ(read->routing[0].task, "detect");
  }
}

TEST(LokiRouting, EachMistakeNamesItsField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[]", "routing.json: must be a JSON object"},
      {R"({"phase": "Fast"})", "routing.json: phase:"},
      {R"({"phase": "HardwareScaling", "tables": [3]})", "tables[0]: must be an object"},
      {R"({"phase": "HardwareScaling", "tables": [{"task": "a"}]})", "tables[0].path"},
      {R"({"phase": "HardwareScaling",
           "tables": [{"path": "p", "task": "a", "to": [{"variant": "v", "fraction": 2}]}]})",
       "tables[0].to[0].fraction: must be in [0, 1], got 2"},
      {R"({"phase": "Overloaded", "backups": [{"task": "a", "variant": "v", "spareRps": -1}]})",
       "backups[0].spareRps"},
      {R"({"phase": "Overloaded", "tables": {}})", "routing.json: tables: must be a list"},
  };
  ExpectErrors(cases, ParseLokiRouting);
}

// 20,000 mutations of what the operator writes under `key`: none crashes the parser, and every
// error names the key first.
template <typename Parse>
void NeverCrashes(const model::Plan& plan, const std::string& key, Parse parse,
                  const model::Pipeline& pipeline = {}) {
  const std::string seed = RoutingConfigMapData(pipeline, plan)[key];
  std::mt19937 rng(3);
  int errors = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string text =
        testing::Mutate(seed, rng, 6, [&] { return "{}[]\",:0-.1"[rng() % 11]; });
    auto r = parse(text);
    if (!r.ok()) {
      ++errors;
      EXPECT_EQ(r.error().message.rfind(key + ": ", 0), 0u) << r.error().message;
    }
  }
  EXPECT_GT(errors, 1000);
}

TEST(LokiRouting, MutatedConfigMapsNeverCrash) {
  model::Plan plan;
  plan.detail = Loki();
  NeverCrashes(plan, kLokiRoutingKey, ParseLokiRouting);
}

model::Plan Pools(const std::string& optimizer) {
  model::PoolPlan pools;
  pools.pools = {{.task = "classify",
                  .qos_ms = 120.5,
                  .members = {{"gpu", 2, 16, 1, 410.25}, {"cpu", 3, 4, 0.2125, 35}},
                  .spill_class = optimizer == "mark" ? "burst" : "",
                  .upper_bound_qps = optimizer == "kairos" ? 530.5 : 0}};
  model::Plan plan;
  plan.report.optimizer = optimizer;
  plan.detail = pools;
  return plan;
}

TEST(PoolsRouting, WhatTheOperatorWritesReadsBackTheSame) {
  for (const std::string optimizer : {"kairos", "mark"}) {
    const model::Plan plan = Pools(optimizer);
    auto read = ParsePoolsRouting(
        RoutingConfigMapData(model::Pipeline{}, plan)[kPoolsRoutingKey].get<std::string>());
    ASSERT_TRUE(read.ok()) << read.error().message;
    EXPECT_EQ(read->optimizer, optimizer);
    EXPECT_EQ(read->plan.pools, plan.pools()->pools);
  }
}

TEST(PoolsRouting, EachMistakeNamesItsField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"3", "pools.json: must be a JSON object"},
      {R"({"pools": []})", "pools.json: optimizer: required"},
      {R"({"optimizer": "", "pools": []})", "pools.json: optimizer: must be a non-empty string"},
      {R"({"optimizer": "kairos", "pools": [{"task": "a"}]})", "pools[0].qosMs"},
      {R"({"optimizer": "kairos", "pools": [{"task": "a", "qosMs": 5, "members": [
           {"hardwareClass": "gpu", "replicas": 1.5}]}]})",
       "pools[0].members[0].replicas: must be an integer, got 1.5"},
      {R"({"optimizer": "kairos", "pools": [{"task": "a", "qosMs": 5, "members": [
           {"hardwareClass": "gpu", "replicas": 1, "maxQuery": 0}]}]})",
       "members[0].maxQuery: must be >= 1, got 0"},
      {R"({"optimizer": "mark", "pools": [{"task": "a", "qosMs": 5, "spillClass": 4}]})",
       "pools[0].spillClass"},
  };
  ExpectErrors(cases, ParsePoolsRouting);
}

TEST(PoolsRouting, MutatedConfigMapsNeverCrash) {
  NeverCrashes(Pools("mark"), kPoolsRoutingKey, ParsePoolsRouting);
}

// A pipeline whose classify/v the router batches, and detect/d the server.
model::Pipeline RouterBatched() {
  model::Pipeline p;
  p.spec.tasks = {{.name = "detect", .variants = {{.name = "d"}}},
                  {.name = "classify", .variants = {{.name = "v", .batch_env = ""}}}};
  return p;
}

// Only the variants the router batches are listed, each once: the batch of its class with the
// most replicas, its wait rounded to whole milliseconds.
TEST(Batching, WhatTheOperatorWritesReadsBackTheSame) {
  model::Plan plan;
  plan.tasks = {
      {.task = "detect", .variant = "d", .replicas = 2, .batch_size = 4, .batch_wait_ms = 3},
      {.task = "classify", .variant = "v", .replicas = 1, .batch_size = 2},
      {.task = "classify",
       .variant = "v",
       .replicas = 3,
       .batch_size = 8,
       .queue_ms = 99,  // the predicted wait is not the budget
       .batch_wait_ms = 12.4}};
  const auto data = RoutingConfigMapData(RouterBatched(), plan);
  ASSERT_TRUE(data.contains(kBatchingKey)) << data.dump();
  auto read = ParseBatching(data[kBatchingKey].get<std::string>());
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(*read, (std::vector<RouterBatch>{{"classify", "v", 8, 12}}));
  EXPECT_FALSE(RoutingConfigMapData(model::Pipeline{}, plan).contains(kBatchingKey))
      << "no variant is batched by the router";
}

TEST(Batching, EachMistakeNamesItsField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[]", "batching.json: must be a JSON object"},
      {R"({"batches": [{"task": "a", "variant": "v", "batchSize": 0, "waitMs": 1}]})",
       "batching.json: batches[0].batchSize: must be >= 1, got 0"},
      {R"({"batches": [{"task": "a", "variant": "v", "batchSize": 2, "waitMs": -1}]})",
       "batches[0].waitMs"},
  };
  ExpectErrors(cases, ParseBatching);
}

TEST(Batching, MutatedConfigMapsNeverCrash) {
  model::Plan plan;
  plan.tasks = {{.task = "classify", .variant = "v", .replicas = 1, .batch_size = 8}};
  NeverCrashes(plan, kBatchingKey, ParseBatching, RouterBatched());
}

}  // namespace
}  // namespace pipescale::api
