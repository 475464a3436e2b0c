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

}  // namespace
}  // namespace pipescale::router
