// The narrowed specs the papers' comparison points run on: each keeps what its name says and
// nothing else, and a narrowing that leaves nothing to run is a clear error.
#include "gym/narrow.h"

#include <gtest/gtest.h>

#include <vector>

namespace pipescale::gym {
namespace {

using nlohmann::json;

json Profile(const std::string& hardware_class) {
  return {{"hardwareClass", hardware_class}, {"latencyMs", {{"constant", 10}}}};
}

// Task "a": variant "big" (0.9) on gpu and cpu, "small" (0.7) on gpu only. Task "b": "only" on cpu.
json TwoClasses() {
  json a = {{"name", "a"},
            {"variants",
             {{{"name", "big"}, {"accuracy", 0.9}, {"profiles", {Profile("gpu"), Profile("cpu")}}},
              {{"name", "small"}, {"accuracy", 0.7}, {"profiles", {Profile("gpu")}}}}}};
  json b = {{"name", "b"}, {"variants", {{{"name", "only"}, {"profiles", {Profile("cpu")}}}}}};
  return {{"spec",
           {{"hardwareClasses", {{{"name", "gpu"}}, {{"name", "cpu"}}}},
            {"forecast", {{"method", "linear"}, {"horizon", "10m"}}},
            {"tasks", {a, b}}}}};
}

TEST(NarrowTest, AnOptimizerAtAClassKeepsThatClassAndItsProfilesOnly) {
  json object = TwoClasses();
  auto name = Narrow("kairos@cpu", object);
  ASSERT_TRUE(name.ok()) << name.error().message;
  EXPECT_EQ(*name, "kairos");
  EXPECT_EQ(object["spec"]["hardwareClasses"], json::array({{{"name", "cpu"}}}));
  const json& a = object["spec"]["tasks"][0]["variants"];
  ASSERT_EQ(a.size(), 1U);  // "small" has no cpu profile
  EXPECT_EQ(a[0]["name"], "big");
  EXPECT_EQ(a[0]["profiles"], json::array({Profile("cpu")}));
  EXPECT_EQ(object["spec"]["tasks"][1], TwoClasses()["spec"]["tasks"][1]);
}

TEST(NarrowTest, AClassThatIsNotThereOrLeavesATaskWithoutAVariantIsAnError) {
  json object = TwoClasses();
  auto missing = Narrow("kairos@tpu", object);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            R"(policy "kairos@tpu": the pipeline has no hardware class "tpu")");
  object = TwoClasses();
  auto empty = Narrow("fa2@gpu", object);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message,
            R"(policy "fa2@gpu": task "b" has no variant profiled on "gpu")");
}

// Narrowing runs before validation, so it meets a pipeline of any shape: it never throws, and
// leaves what it cannot read for validation to name.
TEST(NarrowTest, APipelineOfAnyShapeIsNarrowedWithoutThrowing) {
  const std::vector<json> shapes = {
      json("text"), json{{"spec", "text"}},
      json{{"spec", {{"hardwareClasses", 3}, {"tasks", {1, "x"}}}}},
      json{{"spec", {{"hardwareClasses", {{{"name", 7}}, {{"name", "cpu"}}}}, {"tasks", 3}}}},
      json{{"spec",
            {{"hardwareClasses", {{{"name", "cpu"}}}},
             {"tasks",
              {{{"name", 5}, {"variants", {"v", {{"profiles", 2}}, {{"accuracy", "high"}}}}}}}}}}};
  for (const json& shape : shapes) {
    for (const std::string policy : {"kairos@cpu", "loki-hardware-only", "mark-reactive", "fa2"}) {
      json object = shape;
      EXPECT_NO_THROW((void)Narrow(policy, object)) << policy << " on " << shape.dump();
    }
  }
  json object = TwoClasses();
  EXPECT_FALSE(Narrow("kairos@", object).ok());
}

// Only an optimizer's name before '@' narrows: anything else comes back unchanged, untouched,
// for the caller's "unknown policy".
TEST(NarrowTest, ANameBeforeTheAtThatIsNoOptimizerNarrowsNothing) {
  json object = TwoClasses();
  auto name = Narrow("nonesuch@cpu", object);
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(*name, "nonesuch@cpu");
  EXPECT_EQ(object, TwoClasses());
}

TEST(NarrowTest, LokiHardwareOnlyKeepsEachTasksMostAccurateVariant) {
  json object = TwoClasses();
  auto name = Narrow("loki-hardware-only", object);
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(*name, "loki");
  ASSERT_EQ(object["spec"]["tasks"][0]["variants"].size(), 1U);
  EXPECT_EQ(object["spec"]["tasks"][0]["variants"][0]["name"], "big");
  EXPECT_EQ(object["spec"]["hardwareClasses"].size(), 2U);
}

TEST(NarrowTest, MarkReactiveProvisionsWithoutAForecast) {
  json object = TwoClasses();
  auto name = Narrow("mark-reactive", object);
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(*name, "mark");
  EXPECT_EQ(object["spec"]["forecast"], json({{"method", "none"}}));
}

TEST(NarrowTest, AnyOtherPolicyIsItselfOnTheWholePipeline) {
  for (const std::string policy : {"fa2", "kairos", "nonesuch"}) {
    json object = TwoClasses();
    auto name = Narrow(policy, object);
    ASSERT_TRUE(name.ok());
    EXPECT_EQ(*name, policy);
    EXPECT_EQ(object, TwoClasses());
  }
}

}  // namespace
}  // namespace pipescale::gym
