// The router's count of each task's arrivals per second, and the index it serves from them.
#include "router/arrival_meter.h"

#include <gtest/gtest.h>

#include <random>

#include "routing/dispersion.h"
#include "support/parsed_pipeline.h"
#include "support/pipelines.h"

namespace pipescale::router {
namespace {

using namespace testing::traffic;  // NOLINT(google-build-using-namespace): the test's vocabulary

TEST(ArrivalMeter, CountsARequestAtEveryTaskOfItsPathAndServesTheIndexOfItsSeconds) {
  const routing::Graph graph(testing::TrafficPipeline());
  ArrivalMeter meter("ns", "traffic");
  std::mt19937_64 rng(1);
  std::vector<double> cars;  // what the cars path sent each second
  const std::int64_t start = 1000;
  for (std::int64_t s = start; s < start + routing::kDispersionWindowSeconds; ++s) {
    // Lumpy: 0 or 60 requests a second.
    const int n = std::bernoulli_distribution(0.5)(rng) ? 60 : 0;
    cars.push_back(n);
    for (int i = 0; i < n; ++i) meter.Arrived(graph, kCars, s);
  }
  meter.Arrived(graph, -1, start);  // a walk naming no path counts nowhere
  const std::int64_t now = start + routing::kDispersionWindowSeconds;
  meter.Arrived(graph, kCars, now);  // the second being counted is not read yet
  const auto index = meter.Dispersions(now);
  ASSERT_TRUE(index.contains("detect"));
  ASSERT_TRUE(index.contains("classify"));
  EXPECT_FALSE(index.contains("recognize"));  // the faces path's: nothing came
  EXPECT_EQ(index.at("detect"), routing::ArrivalDispersion(cars));
  EXPECT_EQ(index.at("classify"), index.at("detect"));
  EXPECT_GT(index.at("detect"), 10);
  // Two minutes without an arrival: forgotten.
  EXPECT_TRUE(meter.Dispersions(now + 2 * routing::kDispersionWindowSeconds).empty());
}

// Each path's rate over the last complete seconds, counted as requests arrive: what the
// operator's surge watch reads.
TEST(ArrivalMeter, ServesEachPathsRateOverItsLastCompleteSeconds) {
  const routing::Graph graph(testing::TrafficPipeline());
  ArrivalMeter meter("ns", "traffic");
  const std::int64_t start = 5000;
  // 10 a second for a minute, then 30 and 50 in the last two complete seconds.
  for (std::int64_t s = start; s < start + 60; ++s) {
    for (int i = 0; i < 10; ++i) meter.Arrived(graph, kCars, s);
  }
  for (int i = 0; i < 30; ++i) meter.Arrived(graph, kCars, start + 60);
  for (int i = 0; i < 50; ++i) meter.Arrived(graph, kCars, start + 61);
  for (int i = 0; i < 500; ++i) meter.Arrived(graph, kCars, start + 62);  // not complete yet
  static_assert(routing::kRecentRateSeconds == 2, "the counts above are for a 2 s window");
  const auto recent = meter.RecentRates(start + 62);
  ASSERT_TRUE(recent.contains("cars"));
  EXPECT_DOUBLE_EQ(recent.at("cars"), 40);
  EXPECT_FALSE(recent.contains("faces"));  // nothing came
  // Quiet seconds read 0 while the path is remembered, and nothing after two quiet minutes.
  EXPECT_DOUBLE_EQ(meter.RecentRates(start + 70).at("cars"), 0);
  EXPECT_TRUE(meter.RecentRates(start + 63 + 2 * routing::kDispersionWindowSeconds).empty());
}

}  // namespace
}  // namespace pipescale::router
