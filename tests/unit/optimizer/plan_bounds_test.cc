// A property of every optimizer: whatever the pipeline, its plan keeps within the spec's bounds,
// every task's batch in [1, batchSize.max] and every class's replicas within its maxReplicas
// (testing::CheckBounds). Over generated pipelines and over the shipped examples mutated where
// bounds are easy to break: small batch limits and class limits, profile points listed out of
// order, query sizes of every size the variants accept.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "api/document.h"
#include "api/pipeline_parse.h"
#include "api/workload.h"
#include "optimizer/registry.h"
#include "support/instance_generator.h"
#include "support/plan_checker.h"

namespace pipescale::optimizer {
namespace {

using nlohmann::json;

std::string Describe(const std::vector<std::string>& violations) {
  std::string out;
  for (const auto& v : violations) out += "\n  " + v;
  return out;
}

// Every optimizer that plans `pipeline` at `workload` keeps within its bounds; the solves run.
int ExpectEveryPlanWithinBounds(const model::Pipeline& pipeline, const model::Workload& workload,
                                const std::string& label) {
  int solves = 0;
  for (const Descriptor& d : Optimizers()) {
    if (d.needs_paths && pipeline.spec.paths.empty()) continue;
    if (!api::CheckPlannableBy(pipeline, d.name).empty()) continue;
    const model::Plan plan = d.solve(pipeline, workload, {});
    ++solves;
    const std::vector<std::string> violations = testing::CheckBounds(pipeline, plan);
    EXPECT_TRUE(violations.empty()) << label << ", " << d.name << ":" << Describe(violations);
  }
  return solves;
}

TEST(PlanBounds, GeneratedPipelines) {
  std::mt19937 rng(44);
  int solves = 0;
  for (int i = 0; i < 24; ++i) {
    testing::InstanceOptions options{
        .shape = static_cast<testing::Shape>(i % 3),
        .dnns = 2 + i % 4,
        .max_batch = std::vector<int>{1, 2, 4, 8, 16, 32}[rng() % 6],
        .hardware_classes = 1 + i % 2,
        .variants = 1 + i % 3,
        .max_replicas = i % 4 == 0 ? std::optional<int>(8 + i) : std::nullopt};
    testing::Instance inst = testing::Generate(1000 + i, options);
    for (model::HardwareClass& hw : inst.pipeline.spec.hardware_classes) {
      if (rng() % 2 == 0) hw.max_replicas = 1 + static_cast<int>(rng() % 4);
      hw.cost_per_hour = 0.1 + static_cast<double>(rng() % 10) / 10;
    }
    for (const double scale : {0.2, 1.0, 5.0}) {
      model::Workload w = inst.workload;
      for (auto& [path, rps] : w.path_rates_rps) rps *= scale;
      solves += ExpectEveryPlanWithinBounds(inst.pipeline, w, inst.label);
    }
  }
  EXPECT_GT(solves, 200);
}

// The kairos-rm2 example with a profile's points listed out of order: the parser sorts them, so
// every optimizer plans exactly as from the shipped order, within the bounds.
TEST(PlanBounds, PointsOutOfOrderPlanAsInOrder) {
  const std::string file = std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/kairos-rm2.yaml";
  const auto in_order = api::ParsePipelineFile(file);
  ASSERT_TRUE(in_order.pipeline);
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  json doc = *api::ParseDocument(text.str());
  std::mt19937 rng(7);
  for (json& profile : doc["spec"]["tasks"][0]["variants"][0]["profiles"]) {
    json& points = profile["latencyMs"]["points"];
    std::vector<json> shuffled(points.begin(), points.end());
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    points = shuffled;
  }
  const api::ParsedPipeline shuffled = api::ParsePipeline(doc.dump());
  ASSERT_TRUE(shuffled.pipeline) << shuffled.errors.front().ToString();
  EXPECT_EQ(*shuffled.pipeline, *in_order.pipeline);
  for (const model::Profile& p : shuffled.pipeline->spec.tasks[0].variants[0].profiles) {
    EXPECT_TRUE(std::is_sorted(p.latency.points.begin(), p.latency.points.end(),
                               [](const model::LatencyPoint& a, const model::LatencyPoint& b) {
                                 return a.batch < b.batch;
                               }))
        << p.hardware_class;
  }
  for (const double rate : {1.0, 40.0, 1000.0}) {
    auto workload = api::MakeWorkload(*shuffled.pipeline, rate, {});
    ASSERT_TRUE(workload.ok());
    ExpectEveryPlanWithinBounds(*shuffled.pipeline, *workload, "shuffled kairos-rm2");
  }
}

// The shipped examples, mutated where a bound is easy to break.
class ExampleMutator {
 public:
  explicit ExampleMutator(std::uint32_t seed) : rng_(seed) {}

  json Mutate(json doc) {
    json& spec = doc["spec"];
    for (json& hw : spec["hardwareClasses"]) {
      if (Chance(0.5)) hw["maxReplicas"] = Pick({1, 2, 3, 5});
    }
    for (json& task : spec["tasks"]) {
      for (json& variant : task["variants"]) MutateVariant(variant);
    }
    if (spec.contains("querySizes") && Chance(0.5)) spec.erase("querySizes");
    return doc;
  }

 private:
  void MutateVariant(json& variant) {
    if (Chance(0.6)) variant["batchSize"]["max"] = Pick({1, 2, 4, 7, 16});
    for (json& profile : variant["profiles"]) {
      json& latency = profile["latencyMs"];
      if (!latency.contains("points") || !Chance(0.7)) continue;
      json& points = latency["points"];
      std::vector<json> shuffled(points.begin(), points.end());
      if (Chance(0.5)) {
        std::reverse(shuffled.begin(), shuffled.end());
      } else {
        std::shuffle(shuffled.begin(), shuffled.end(), rng_);
      }
      points = shuffled;
    }
  }

  bool Chance(double p) { return std::uniform_real_distribution<>(0, 1)(rng_) < p; }
  int Pick(const std::vector<int>& values) { return values[rng_() % values.size()]; }

  std::mt19937 rng_;
};

TEST(PlanBounds, MutatedExamples) {
  const std::filesystem::path dir = std::filesystem::path(PIPESCALE_SOURCE_DIR) / "deploy/examples";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  int valid = 0, solves = 0;
  for (const auto& file : files) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    const auto doc = api::ParseDocument(text.str());
    ASSERT_TRUE(doc.ok()) << file;
    ExampleMutator mutator(static_cast<std::uint32_t>(std::hash<std::string>()(file.filename())));
    for (int i = 0; i < 6; ++i) {
      const json mutated = mutator.Mutate(*doc);
      const api::ParsedPipeline parsed = api::ParsePipeline(mutated.dump());
      if (!parsed.pipeline) continue;
      ++valid;
      for (const double rate : {1.0, 40.0}) {
        auto workload = api::MakeWorkload(*parsed.pipeline, rate, {});
        ASSERT_TRUE(workload.ok()) << workload.error().message;
        solves += ExpectEveryPlanWithinBounds(*parsed.pipeline, *workload,
                                              file.filename().string() + " mutation " +
                                                  std::to_string(i) + " at " +
                                                  std::to_string(rate) + " rps");
      }
    }
  }
  // Enough of the mutations stay valid for the property to mean something.
  EXPECT_GT(valid, 15);
  EXPECT_GT(solves, 100);
}

}  // namespace
}  // namespace pipescale::optimizer
