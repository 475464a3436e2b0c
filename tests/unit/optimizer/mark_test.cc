#include "optimizer/mark.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

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

// A forecaster that proposes the last rate plus `rise` at every step ahead.
class PlusConstant : public Forecaster {
 public:
  explicit PlusConstant(double rise) : rise_(rise) {}
  std::string Name() const override { return "plus-constant"; }
  std::vector<double> Forecast(const std::vector<double>& history, int steps) const override {
    return std::vector<double>(steps, history.back() + rise_);
  }

 private:
  double rise_;
};

TEST(MarkForecastTrust, TheShareOfTheProposedRisesThatCameOverTheWindow) {
  // Checked against a direct count on generated series: a forecast of +rise at every origin
  // proposes `rise`; what came is the series' highest from `lead` to the horizon above the
  // origin's rate, at most the rise.
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> rate(0, 100);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 80);
    const int lead = static_cast<int>(rng() % 4);
    const int steps = lead + 1 + static_cast<int>(rng() % 6);
    const int window = 1 + static_cast<int>(rng() % 40);
    const double rise = 1 + rate(rng) / 4;
    std::vector<double> series(n);
    for (double& x : series) x = rate(rng);
    int origins = 0;
    double came = 0;
    const int ahead = std::max({lead, 1, steps - 1});
    for (int o = n - 1 - ahead; o >= 0 && o > n - 1 - ahead - window; --o) {
      double highest = 0;
      for (int h = std::max(lead, 1); h < steps; ++h) highest = std::max(highest, series[o + h]);
      came += std::clamp(highest - series[o], 0.0, rise);
      ++origins;
    }
    const double expected = origins >= kMinTrustedForecasts ? came / (origins * rise) : 0;
    SCOPED_TRACE(testing::Message() << "trial " << trial);
    EXPECT_NEAR(ForecastTrust(PlusConstant(rise), series, lead, steps, window), expected, 1e-12);
  }
}

TEST(MarkForecastTrust, RightForecastsAreTrustedAndWrongOnesAreNot) {
  std::vector<double> ramp, flat(60, 100.0);
  for (int k = 0; k < 60; ++k) ramp.push_back(100 + 10 * k);
  // The trend of a ramp came, all of it; rises proposed over a flat series never did.
  EXPECT_NEAR(ForecastTrust(*LinearTrend(), ramp, 3, 11, 30), 1, 1e-9);
  EXPECT_DOUBLE_EQ(ForecastTrust(PlusConstant(20), flat, 3, 11, 30), 0);
  // Only the last `window` origins count: rises that came an hour ago vouch for nothing now.
  std::vector<double> then_flat = ramp;
  then_flat.insert(then_flat.end(), 60, ramp.back());
  EXPECT_DOUBLE_EQ(ForecastTrust(PlusConstant(5), then_flat, 3, 11, 30), 0);
  EXPECT_GT(ForecastTrust(PlusConstant(5), then_flat, 3, 11, 120), 0.3);
  // Until enough forecasts proposed a rise, none is trusted: 4 scored origins here.
  EXPECT_DOUBLE_EQ(ForecastTrust(PlusConstant(5),
                                 std::vector<double>(ramp.begin(), ramp.begin() + 14), 3, 11, 30),
                   0);
  EXPECT_DOUBLE_EQ(ForecastTrust(PlusConstant(5), ramp, 3, 11, 30), 1);
  // A forecaster that proposes nothing, or nonsense, earns nothing.
  EXPECT_DOUBLE_EQ(ForecastTrust(PlusConstant(0), ramp, 3, 11, 30), 0);
  EXPECT_DOUBLE_EQ(
      ForecastTrust(PlusConstant(std::numeric_limits<double>::infinity()), ramp, 3, 11, 30), 0);
  EXPECT_DOUBLE_EQ(ForecastTrust(PlusConstant(5), {}, 3, 11, 30), 0);
}

TEST(MarkForecastTrust, NeverFallsAsTheRisesThatCameGrow) {
  // Property: raising every rate after the origins' (so more of each proposed rise comes) never
  // lowers the trust, and it stays in [0, 1].
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> rate(50, 150);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<double> series(70);
    for (double& x : series) x = rate(rng);
    double last = -1;
    for (double lift = 0; lift <= 60; lift += 10) {
      std::vector<double> lifted = series;
      for (size_t k = 30; k < lifted.size(); ++k) lifted[k] += lift * (k - 29) / 40.0;
      const double trust = ForecastTrust(PlusConstant(15), lifted, 2, 8, 20);
      EXPECT_GE(trust, 0);
      EXPECT_LE(trust, 1);
      EXPECT_GE(trust, last - 1e-12) << "trial " << trial << " lift " << lift;
      last = trust;
    }
  }
}

}  // namespace
}  // namespace pipescale::optimizer::mark
