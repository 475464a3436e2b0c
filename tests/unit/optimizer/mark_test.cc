#include "optimizer/mark.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numbers>

namespace pipescale::optimizer::mark {
namespace {

// MArk's profiled capacities (requests per minute per instance) and the era's list prices;
// one planning step is a minute, launch overhead 180 s of price, as in the MArk prototype.
InstanceClass PerMinute(const char* name, double per_minute, double dollars_per_hour) {
  return {name, per_minute, dollars_per_hour / 60, dollars_per_hour * 180 / 3600};
}
const InstanceClass kC5Large = PerMinute("c5.large", 284, 0.085);
const InstanceClass kP2 = PerMinute("p2.xlarge", 3320, 0.90);

TEST(MarkProvision, FlatLoadTakesTheCheapestPerRequest) {
  // 3300 req/min for 50 minutes: one p2 (about 4.8e-6 $/request) beats twelve c5.large (5.3e-6).
  const std::vector<int> plan =
      Provision(std::vector<double>(50, 3300), {kC5Large, kP2}, {0, 0}, 0);
  EXPECT_EQ(plan, (std::vector<int>{0, 1}));
  // Just above one p2: the remainder goes to a c5.large, not a second p2.
  EXPECT_EQ(Provision(std::vector<double>(50, 3500), {kC5Large, kP2}, {0, 0}, 0),
            (std::vector<int>{1, 1}));
}

TEST(MarkProvision, AShortSpikeGoesToTheClassThatIsCheapToLaunch) {
  // Two minutes above the base load: a GPU's launch overhead is not worth two minutes.
  InstanceClass gpu = kP2;
  gpu.launch_overhead = 10 * gpu.price_per_step * 60;  // a slow, expensive start
  std::vector<double> load(50, 0);
  load[0] = load[1] = 900;
  const std::vector<int> plan = Provision(load, {kC5Large, gpu}, {0, 0}, 0);
  EXPECT_EQ(plan, (std::vector<int>{4, 0}));
}

TEST(MarkProvision, RunningInstancesWinTiesAndCoverFirst) {
  // Two identical classes; one instance of the second already runs: it is kept, none launched.
  const InstanceClass a = PerMinute("a", 100, 0.1), b = PerMinute("b", 100, 0.1);
  EXPECT_EQ(Provision(std::vector<double>(10, 100), {a, b}, {0, 1}, 0), (std::vector<int>{0, 1}));
  // The load needs two: the running one and the cheapest new one.
  EXPECT_EQ(Provision(std::vector<double>(10, 150), {a, b}, {0, 1}, 0), (std::vector<int>{1, 1}));
}

TEST(MarkProvision, PlansForTheLoadAtTheLeadTime) {
  // Load doubles at step 5: every step of the forecast is covered, so the plan is for the
  // doubled load at once.
  std::vector<double> load(30, 100);
  for (size_t t = 5; t < load.size(); ++t) load[t] = 200;
  const InstanceClass a = PerMinute("a", 100, 0.1);
  EXPECT_EQ(Provision(load, {a}, {0}, 0), (std::vector<int>{2}));
  // A peak now that is over before a launch (5 steps) could serve it is not provisioned for.
  std::vector<double> passing(30, 100);
  for (size_t t = 0; t < 5; ++t) passing[t] = 200;
  EXPECT_EQ(Provision(passing, {a}, {0}, 0), (std::vector<int>{2}));
  EXPECT_EQ(Provision(passing, {a}, {0}, 5), (std::vector<int>{1}));
}

TEST(MarkProvision, NoScaleInInsideTheCooldown) {
  std::vector<std::vector<int>> plans = {{3, 1}, {1, 1}, {1, 0}};
  EXPECT_EQ(WithCooldown(plans, 6), (std::vector<int>{3, 1}));
  // Once the large plan is more than `cooldown` plans old, it no longer holds.
  for (int i = 0; i < 6; ++i) plans.push_back({1, 0});
  EXPECT_EQ(WithCooldown(plans, 6), (std::vector<int>{1, 0}));
}

TEST(MarkBatching, LargestBatchMeetingBothRules) {
  // A GPU: T(b) = 20 + 5 b ms; RT_max 200 ms; 100 requests/s per instance (10 ms apart).
  const auto gpu = [](int b) { return 20.0 + 5.0 * b; };
  const BatchTuning t = TuneBatch(gpu, 200, 100, 64);
  // W(b) + T(b) = 10 (b - 1) + 20 + 5 b <= 200 holds to b = 12; <= b T(1) = 25 b always.
  EXPECT_EQ(t.max_batch, 12);
  EXPECT_DOUBLE_EQ(t.wait_ms, 110);
  EXPECT_NEAR(t.rate_rps, 1000.0 * 12 / 80, 1e-9);
  // A CPU whose batch time grows linearly gains nothing from waiting: N = 1.
  EXPECT_EQ(TuneBatch([](int b) { return 30.0 * b; }, 500, 100, 64).max_batch, 1);
}

TEST(MarkSloGuard, AddsOnceThenWaitsOutTheCooldown) {
  SloGuard guard(/*window=*/100, /*slo_min=*/0.98, /*step=*/2, /*cooldown=*/5);
  for (int i = 0; i < 100; ++i) guard.Observe(true);
  EXPECT_EQ(guard.Check(), 0);
  for (int i = 0; i < 3; ++i) guard.Observe(false);  // 3% late
  EXPECT_NEAR(guard.Attainment(), 0.97, 1e-12);
  EXPECT_EQ(guard.Check(), 2);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(guard.Check(), 0) << "inside the cool-down";
  EXPECT_EQ(guard.Check(), 2) << "still late after the cool-down";
  for (int i = 0; i < 100; ++i) guard.Observe(true);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(guard.Check(), 0);
}

// A diurnal series with a 4:1 peak to valley ratio (MArk's Twitter trace shape), one step a
// minute over four days, with a little deterministic wiggle.
std::vector<double> Diurnal() {
  std::vector<double> s;
  for (int t = 0; t < 4 * 1440; t += 10) {  // 10-minute steps: a day is 144 of them
    const double day = std::sin(2 * std::numbers::pi * t / 1440.0);
    s.push_back(250 + 150 * day + 10 * std::sin(t * 0.37));
  }
  return s;
}

TEST(MarkForecast, BacktestsRankTheForecasters) {
  const auto series = Diurnal();
  const auto peak = RunBacktest(*PeakHold(1.2), series, 144, 3);
  const auto ewma = RunBacktest(*Ewma(0.5), series, 144, 3);
  const auto trend = RunBacktest(*LinearTrend(6), series, 144, 3);
  const auto hw = RunBacktest(*HoltWinters(144), series, 288, 3);
  for (const auto& b : {peak, ewma, trend, hw}) {
    std::printf("%-13s MAPE %5.1f%%  under-provisioned %5.1f%% of steps  over by %5.1f%%\n",
                b.forecaster.c_str(), 100 * b.mape, 100 * b.under_provisioned,
                100 * b.over_provision);
  }
  // Peak-hold never under-provisions but pays for it; Holt-Winters learns the season.
  EXPECT_EQ(peak.under_provisioned, 0);
  EXPECT_GT(peak.over_provision, 0.5);
  EXPECT_LT(hw.mape, 0.08);  // the wiggle is +-10 on a valley of 100
  EXPECT_LT(hw.mape, ewma.mape);
  EXPECT_LT(trend.mape, ewma.mape);  // on a smooth curve the slope carries three steps ahead
}

TEST(MarkSpill, OnlyWhenEveryMainInstanceWouldBeLate) {
  // RT_max 100 ms: a GPU busy for 60 ms more (30 ms service) and an idle CPU (80 ms service).
  EXPECT_FALSE(Spill({60, 0}, {30, 80}, 0, 100));   // both fit
  EXPECT_FALSE(Spill({60, 0}, {30, 80}, 15, 100));  // the CPU still does (95 ms)
  EXPECT_TRUE(Spill({60, 0}, {30, 80}, 25, 100));   // neither: 115 and 105 ms
  EXPECT_TRUE(Spill({}, {}, 0, 100));               // no main instance at all
}

}  // namespace
}  // namespace pipescale::optimizer::mark
