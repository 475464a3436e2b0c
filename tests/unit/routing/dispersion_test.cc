#include "routing/dispersion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "model/limits.h"

namespace pipescale::routing {
namespace {

// A window of per-second counts: Poisson at a rate that each second draws from a gamma of mean
// `rate` and coefficient of variation `cv` (0: a steady rate). Such counts have an index of
// dispersion of 1 + rate cv^2.
std::vector<double> Window(double rate, double cv, std::mt19937_64& rng) {
  std::vector<double> out;
  for (int s = 0; s < kDispersionWindowSeconds; ++s) {
    double lambda = rate;
    if (cv > 0) lambda = std::gamma_distribution<double>(1 / (cv * cv), rate * cv * cv)(rng);
    out.push_back(static_cast<double>(std::poisson_distribution<long>(lambda)(rng)));
  }
  return out;
}

TEST(ArrivalDispersion, ASteadyPoissonLoadAlmostNeverReadsAsBursty) {
  std::mt19937_64 rng(3);
  for (double rate : {0.2, 2.0, 17.5, 120.0, 2000.0}) {
    int bursty = 0;
    double most = 1;
    for (int w = 0; w < 200; ++w) {
      const double index = ArrivalDispersion(Window(rate, 0, rng));
      bursty += index > 1 ? 1 : 0;
      most = std::max(most, index);
    }
    // Two standard errors are taken off: about 2% of windows read above 1, by little.
    EXPECT_LE(bursty, 12) << "at " << rate << "/s";
    EXPECT_LT(most, 1.5) << "at " << rate << "/s";
  }
}

TEST(ArrivalDispersion, BurstyArrivalsReadAsTheirIndexLessTheNoise) {
  std::mt19937_64 rng(5);
  for (const auto& [rate, cv] : {std::pair{20.0, 0.3}, {120.0, 0.15}, {120.0, 0.3}, {400.0, 0.1}}) {
    const double truth = 1 + rate * cv * cv;
    double sum = 0;
    for (int w = 0; w < 100; ++w) {
      const double index = ArrivalDispersion(Window(rate, cv, rng));
      EXPECT_LE(index, truth * 1.5) << rate << "/s, cv " << cv;
      sum += index;
    }
    // Below the truth by about the noise taken off (2 sqrt(3 / 119) = 0.32), never above it.
    EXPECT_LE(sum / 100, truth) << rate << "/s, cv " << cv;
    EXPECT_GE(sum / 100, truth - 0.2 * truth - 0.32) << rate << "/s, cv " << cv;
  }
}

TEST(ArrivalDispersion, ARateThatDriftsOverMinutesIsNotABurst) {
  std::mt19937_64 rng(9);
  double sum = 0;
  for (int w = 0; w < 100; ++w) {
    std::vector<double> counts;
    for (int s = 0; s < kDispersionWindowSeconds; ++s) {  // 20/s to 80/s over the window
      const double lambda = 20 + 60.0 * s / kDispersionWindowSeconds;
      counts.push_back(static_cast<double>(std::poisson_distribution<long>(lambda)(rng)));
    }
    sum += ArrivalDispersion(counts);
  }
  EXPECT_LT(sum / 100, 1.05);
}

TEST(ArrivalDispersion, TheSecondsBeforeTheFirstArrivalSayNothing) {
  std::mt19937_64 rng(11);
  std::vector<double> late(60, 0);
  const std::vector<double> load = Window(100, 0.2, rng);
  late.insert(late.end(), load.begin(), load.begin() + 60);
  const std::vector<double> same(load.begin(), load.begin() + 60);
  EXPECT_EQ(ArrivalDispersion(late), ArrivalDispersion(same));
  // A load that starts at 100/s is not a burst from 0.
  std::vector<double> start(60, 0);
  const std::vector<double> steady = Window(100, 0, rng);
  start.insert(start.end(), steady.begin(), steady.begin() + 60);
  EXPECT_LT(ArrivalDispersion(start), 1.5);
}

TEST(ArrivalDispersion, TooLittleToSayIsPoisson) {
  EXPECT_EQ(ArrivalDispersion({}), 1);
  EXPECT_EQ(ArrivalDispersion(std::vector<double>{7}), 1);
  EXPECT_EQ(ArrivalDispersion(std::vector<double>(120, 0)), 1);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(ArrivalDispersion(std::vector<double>{nan, 3, 4}), 1);
  EXPECT_EQ(ArrivalDispersion(std::vector<double>{1e300, 0, 1e300}), 1);
  EXPECT_EQ(ArrivalDispersion(std::vector<double>{3, inf, 4}), 1);
}

TEST(ArrivalDispersion, LumpsReadAtTheCap) {
  std::vector<double> lumps(kDispersionWindowSeconds, 0);
  for (size_t s = 0; s < lumps.size(); s += 10) lumps[s] = 5000;
  EXPECT_EQ(ArrivalDispersion(lumps), limits::kMaxDispersion);
}

}  // namespace
}  // namespace pipescale::routing
