// The surge rule: what the operator plans for at once, before the rate windows see a burst.
#include "reconciler/surge.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "model/limits.h"
#include "routing/recent_rate.h"
#include "support/parsed_pipeline.h"
#include "support/pipelines.h"

namespace pipescale::reconciler {
namespace {

// The rate of one recent window of Poisson arrivals at `rate`.
double RecentPoisson(double rate, std::mt19937_64& rng) {
  std::vector<double> counts;
  for (int s = 0; s < routing::kRecentRateSeconds; ++s) {
    counts.push_back(static_cast<double>(std::poisson_distribution<long>(rate)(rng)));
  }
  return routing::RecentRate(counts);
}

TEST(SurgeRates, ASteadyPoissonLoadAlmostNeverSurges) {
  std::mt19937_64 rng(7);
  for (double rate : {0.1, 1.0, 8.0, 27.0, 150.0, 2000.0}) {
    int surges = 0;
    const int windows = 20000;
    for (int i = 0; i < windows; ++i) {
      surges +=
          static_cast<int>(SurgeRates({{"p", RecentPoisson(rate, rng)}}, {{"p", rate}}).size());
    }
    EXPECT_LE(surges, windows / 500) << rate << " requests/s";  // at most 0.2% of windows
  }
}

TEST(SurgeRates, ADoubledRateSurgesFromAFewRequestsASecondAndPlansForTheRecentRate) {
  for (double rate : {8.0, 27.0, 150.0, 2000.0}) {
    const auto surges = SurgeRates({{"p", 2 * rate}}, {{"p", rate}});
    ASSERT_TRUE(surges.contains("p")) << rate;
    EXPECT_EQ(surges.at("p"), 2 * rate);
  }
  // From nothing: a few requests in the window are a surge, one is not.
  EXPECT_TRUE(SurgeRates({{"p", 3.0}}, {}).contains("p"));
  EXPECT_TRUE(SurgeRates({{"p", 0.5}}, {}).empty());
}

// Property: a rate that surges past a measured one also surges at any higher rate, and past
// any lower measured rate; the rule never fires at or below kSurgeRatio of the measured rate.
TEST(SurgeRates, IsMonotoneInTheRecentAndTheMeasuredRates) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> rate(0, 500);
  for (int i = 0; i < 5000; ++i) {
    const double measured = rate(rng), recent = rate(rng);
    const bool surges = !SurgeRates({{"p", recent}}, {{"p", measured}}).empty();
    if (recent <= kSurgeRatio * measured) {
      EXPECT_FALSE(surges) << recent << " " << measured;
    }
    if (!surges) continue;
    EXPECT_FALSE(SurgeRates({{"p", recent * 1.01 + 0.01}}, {{"p", measured}}).empty());
    EXPECT_FALSE(SurgeRates({{"p", recent}}, {{"p", measured * 0.99}}).empty());
  }
}

TEST(SurgeRates, LumpierArrivalsNeedALargerRiseAndNonsenseNeverSurges) {
  // 1.4x at 50/s: beyond Poisson noise, within the noise of an index of 8.
  EXPECT_FALSE(SurgeRates({{"p", 70.0}}, {{"p", 50.0}}).empty());
  EXPECT_TRUE(SurgeRates({{"p", 70.0}}, {{"p", 50.0}}, {{"p", 8.0}}).empty());
  // An index below 1 or not a number is Poisson's.
  EXPECT_FALSE(SurgeRates({{"p", 70.0}}, {{"p", 50.0}}, {{"p", 0.1}}).empty());
  EXPECT_FALSE(
      SurgeRates({{"p", 70.0}}, {{"p", 50.0}}, {{"p", std::numeric_limits<double>::quiet_NaN()}})
          .empty());
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(SurgeRates({{"a", nan}, {"b", kInf}, {"c", -5.0}}, {}).empty());
  // A measured rate that is not a rate reads as none measured.
  EXPECT_FALSE(SurgeRates({{"p", 10.0}}, {{"p", nan}}).empty());
}

TEST(PathDispersions, AreTheLumpiestTaskOfEachPathWithinTheLimits) {
  const model::Pipeline pipeline = testing::TrafficPipeline();
  const auto paths =
      PathDispersions(pipeline, {{"detect", 1.5},
                                 {"classify", 3.0},
                                 {"recognize", std::numeric_limits<double>::quiet_NaN()}});
  EXPECT_EQ(paths.at("cars"), 3.0);
  EXPECT_EQ(paths.at("faces"), 1.5);
  EXPECT_EQ(PathDispersions(pipeline, {{"detect", 1e300}}).at("cars"), limits::kMaxDispersion);
  EXPECT_EQ(PathDispersions(pipeline, {}).at("faces"), 1.0);
}

// What the operator's watch queues: a pipeline whose optimizer plans for surges, with a router,
// whose status reported rates.
TEST(Surging, NeedsAnOptimizerThatPlansForThemARouterAndTheRatesAStatusReported) {
  model::Pipeline pipeline = testing::TrafficPipeline();
  pipeline.spec.optimizer = "fa2";
  model::PipelineStatus status;
  const std::map<std::string, double> burst = {{"cars", 100.0}};
  EXPECT_FALSE(Surging(pipeline, status, burst));  // no router measures the recent rates
  pipeline.spec.router = model::RouterSpec{};
  EXPECT_FALSE(Surging(pipeline, status, burst));  // nothing reported: the first plan comes anyway
  status.observed = model::ObservedLoad{.path_rates_rps = {{"cars", 10.0}}};
  EXPECT_TRUE(SurgeWatched(pipeline, status));
  EXPECT_TRUE(Surging(pipeline, status, burst));
  EXPECT_FALSE(Surging(pipeline, status, {{"cars", 10.0}}));
  pipeline.spec.optimizer = "loki";  // meets bursts in its data plane
  EXPECT_FALSE(Surging(pipeline, status, burst));
}

}  // namespace
}  // namespace pipescale::reconciler
