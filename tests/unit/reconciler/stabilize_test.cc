// The stabilization windows on their own, with the HPA's semantics over a step function of
// recommendations.
#include "reconciler/stabilize.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/status_json.h"

namespace pipescale::reconciler {
namespace {

const model::Behavior kBehavior{.scale_down_window_seconds = 300, .scale_up_window_seconds = 60};

// 8 was recommended from 1000 until 1100, then 5 until 1200, then 3.
std::vector<Recommendation> Falling() {
  std::vector<Recommendation> history;
  Remember(history, {1000, {{"d", 8}}}, kBehavior);
  Remember(history, {1100, {{"d", 5}}}, kBehavior);
  Remember(history, {1200, {{"d", 3}}}, kBehavior);
  return history;
}

TEST(Stabilize, ScaleDownWaitsForTheHighestRecommendationWithinTheWindow) {
  const std::vector<Recommendation> history = Falling();
  EXPECT_EQ(Stabilize(history, "d", 3, 8, kBehavior, 1300), 8);  // 8 ended at 1100: within 300 s
  EXPECT_EQ(Stabilize(history, "d", 3, 8, kBehavior, 1450), 5);  // 8 has left, 5 has not
  EXPECT_EQ(Stabilize(history, "d", 3, 8, kBehavior, 1550), 3);
}

TEST(Stabilize, ScaleUpGoesNoFurtherThanTheLowestRecommendationWithinTheWindow) {
  std::vector<Recommendation> history;
  Remember(history, {1000, {{"d", 4}}}, kBehavior);
  Remember(history, {1030, {{"d", 9}}}, kBehavior);
  EXPECT_EQ(Stabilize(history, "d", 9, 2, kBehavior, 1060), 4);
  EXPECT_EQ(Stabilize(history, "d", 9, 2, kBehavior, 1100), 9);  // 4 ended 70 s ago
}

TEST(Stabilize, ANewDeploymentTakesThePlanAsItIs) {
  const std::vector<Recommendation> history = {{1000, {{"d", 8}}}};
  EXPECT_EQ(Stabilize(history, "d", 3, std::nullopt, kBehavior, 1001), 3);
  EXPECT_EQ(Stabilize(history, "other", 3, 6, kBehavior, 1001), 3);  // no history of its own
}

// A steady recommendation is one step however often it is made: the status that keeps the
// history is not rewritten by reconciles that change nothing.
TEST(Stabilize, ASteadyRecommendationIsOneStep) {
  std::vector<Recommendation> history;
  for (double at = 1000; at < 2000; at += 15) Remember(history, {at, {{"d", 4}}}, kBehavior);
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history.front().since, 1000);
}

TEST(Stabilize, RememberDropsStepsThatEndedBeforeTheLongerWindow) {
  std::vector<Recommendation> history;
  Remember(history, {1000, {{"d", 1}}}, kBehavior);
  Remember(history, {1200, {{"d", 2}}}, kBehavior);
  Remember(history, {1600, {{"d", 3}}}, kBehavior);
  ASSERT_EQ(history.size(), 2u);  // the first ended at 1200, 400 s before 1600
  EXPECT_EQ(history.front().since, 1200);
}

// Property: merging steps to stay bounded never lets a scale-down happen sooner than the whole
// history would.
TEST(Stabilize, BoundedHistoryNeverScalesDownSooner) {
  const model::Behavior slow{.scale_down_window_seconds = 3600, .scale_up_window_seconds = 0};
  std::vector<Recommendation> bounded;
  std::vector<Recommendation> whole;
  for (int k = 0; k < 200; ++k) {
    const Recommendation r{1000.0 + 10 * k, {{"d", 1 + (k * 37) % 11}}};
    Remember(bounded, r, slow);
    if (whole.empty() || whole.back().replicas != r.replicas) whole.push_back(r);
    ASSERT_LE(bounded.size(), kMaxRecommendations);
    const double now = r.since;
    for (int desired = 0; desired <= 12; ++desired) {
      EXPECT_GE(Stabilize(bounded, "d", desired, 12, slow, now),
                Stabilize(whole, "d", desired, 12, slow, now))
          << k;
    }
  }
}

// The steps as status.memory keeps them (api/status_json.h) read back as written; what cannot be
// read is left out.
std::vector<Recommendation> ReadBack(const nlohmann::json& steps) {
  std::vector<std::string> dropped;
  const auto status = api::ReadStatus({{"memory", {{"recommendations", steps}}}}, "", &dropped);
  return status.memory ? status.memory->recommendations : std::vector<Recommendation>{};
}

TEST(Stabilize, TheStatusFormRoundTripsAndSkipsWhatItCannotRead) {
  const std::vector<Recommendation> history = Falling();
  const model::PipelineStatus status{.memory = model::StatusMemory{.recommendations = history}};
  EXPECT_EQ(api::ReadStatus(api::StatusToJson(status)), status);
  const auto hostile = nlohmann::json::parse(R"([
    {"since": 5, "replicas": {"a": 2, "b": "x", "c": 1e30}},
    {"since": "soon", "replicas": {}}, 7, null,
    {"since": 3, "replicas": {"a": 9}},
    {"since": 9, "replicas": {"a": -4}}])");
  const std::vector<Recommendation> read = ReadBack(hostile);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].replicas, (std::map<std::string, int>{{"a", 2}}));
  EXPECT_EQ(read[1].replicas.at("a"), 0);
  EXPECT_TRUE(ReadBack(nlohmann::json("steps")).empty());
}

}  // namespace
}  // namespace pipescale::reconciler
