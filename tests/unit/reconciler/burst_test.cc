// Capacity for bursts: the allowance against a direct computation on generated series, and the
// properties it promises (nothing for a steady or falling rate, never below the measured one,
// only the last window counts, it scales with the rises).
#include "reconciler/burst.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace pipescale::reconciler {
namespace {

// The allowance written out step by step, as the header states it.
double Direct(const std::vector<double>& series, double measured, int lead, double allowance) {
  if (series.size() < static_cast<size_t>(lead) + kBurstMinRises) return measured;
  const size_t first = series.size() > kBurstWindow ? series.size() - kBurstWindow : 0;
  std::vector<double> rises;
  for (size_t i = first; i + lead < series.size(); ++i) {
    rises.push_back(std::max(0.0, series[i + lead] - series[i]));
  }
  double sum = 0;
  for (double r : rises) sum += r * r;
  double mean = 0;
  for (size_t i = first; i < series.size(); ++i) mean += series[i];
  mean /= static_cast<double>(series.size() - first);
  const double square = sum / static_cast<double>(rises.size()) - mean / kRateWindowSeconds;
  return measured + allowance * std::sqrt(std::max(0.0, square));
}

// A steady Poisson load as Prometheus counts it: each interval's rate is a count over
// kRateWindowSeconds divided by it.
std::vector<double> Counted(std::mt19937& rng, size_t n, double rps) {
  std::poisson_distribution<int> count(rps * kRateWindowSeconds);
  std::vector<double> out(n);
  for (double& r : out) r = count(rng) / kRateWindowSeconds;
  return out;
}

std::vector<double> Noisy(std::mt19937& rng, size_t n, double mean, double spread) {
  std::normal_distribution<double> rate(mean, spread);
  std::vector<double> out(n);
  for (double& r : out) r = std::max(0.0, rate(rng));
  return out;
}

TEST(Burst, MatchesTheRuleOnGeneratedSeries) {
  std::mt19937 rng(7);
  for (int k = 0; k < 200; ++k) {
    const size_t n = 1 + rng() % 60;
    const int lead = 1 + static_cast<int>(rng() % 5);
    const std::vector<double> series = Noisy(rng, n, 100, 30);
    const double z = (rng() % 40) / 10.0;
    EXPECT_NEAR(BurstRate(series, series.back(), lead, z), Direct(series, series.back(), lead, z),
                1e-9)
        << "n " << n << " lead " << lead << " z " << z;
  }
}

TEST(Burst, ASteadyOrFallingRateGetsNothing) {
  const std::vector<double> steady(30, 120.0);
  EXPECT_DOUBLE_EQ(BurstRate(steady, 120, 2, 2.5), 120);
  std::vector<double> falling;
  for (int k = 0; k < 30; ++k) falling.push_back(300 - 10 * k);
  EXPECT_DOUBLE_EQ(BurstRate(falling, 10, 2, 2.5), 10);
}

TEST(Burst, TooFewRatesSayNothing) {
  std::vector<double> series = {10, 100, 10};
  EXPECT_DOUBLE_EQ(BurstRate(series, 10, 1, 2.5), 10);  // 2 changes over an interval
  series.push_back(100);
  EXPECT_GT(BurstRate(series, 100, 1, 2.5), 100);  // 3
}

// A square wave of 100 <-> 140 over one interval each: of the window's 29 one-interval changes,
// 15 are rises of 40.
TEST(Burst, ASquareWaveGetsItsRiseTimesTheAllowance) {
  std::vector<double> wave;
  for (int k = 0; k < 30; ++k) wave.push_back(k % 2 == 0 ? 100 : 140);
  EXPECT_NEAR(BurstRate(wave, 100, 1, 2), 100 + 2 * std::sqrt(40 * 40 * 15.0 / 29 - 120 / 10.0),
              1e-9);
  EXPECT_DOUBLE_EQ(BurstRate(wave, 100, 2, 2), 100);  // over two intervals it never rises
  EXPECT_DOUBLE_EQ(BurstRate(wave, 100, 1, 0), 100);  // turned off
}

TEST(Burst, NeverBelowTheMeasuredRateAndGrowsWithTheAllowanceAndTheRises) {
  std::mt19937 rng(11);
  for (int k = 0; k < 100; ++k) {
    const std::vector<double> series = Noisy(rng, 40, 50, 20);
    const double measured = series.back();
    const double low = BurstRate(series, measured, 2, 1);
    const double high = BurstRate(series, measured, 2, 3);
    EXPECT_GE(low, measured);
    EXPECT_GE(high, low);
    // Twice the rates, twice the rises, but the counting noise only twice in mean square: more
    // than twice the allowance, never less.
    std::vector<double> doubled = series;
    for (double& r : doubled) r *= 2;
    EXPECT_GE(BurstRate(doubled, 2 * measured, 2, 1) - 2 * measured, 2 * (low - measured) - 1e-9);
  }
}

// A steady Poisson load has no bursts: what its counts move by is noise, and at the rates of the
// examples (17.5/s) the rule without the noise term planned 19% above the rate for it. Over 200
// windows the allowance is a small share of that, and a real burst on the same load still counts.
TEST(Burst, CountingNoiseIsNotABurst) {
  std::mt19937 rng(3);
  double with = 0, without = 0;
  for (int k = 0; k < 200; ++k) {
    const std::vector<double> series = Counted(rng, kBurstWindow, 17.5);
    with += BurstRate(series, 17.5, 2, 2.5) - 17.5;
    double sum = 0;
    for (size_t i = 0; i + 2 < series.size(); ++i) {
      const double rise = std::max(0.0, series[i + 2] - series[i]);
      sum += rise * rise;
    }
    without += 2.5 * std::sqrt(sum / static_cast<double>(series.size() - 2));
  }
  EXPECT_GT(without / 200, 0.15 * 17.5);  // what the noise alone used to buy
  EXPECT_LT(with, 0.25 * without) << with / 200 << " against " << without / 200;
  std::vector<double> burst = Counted(rng, kBurstWindow, 17.5);
  burst[20] = burst[21] = 52.5;  // three times the rate for two intervals
  EXPECT_GT(BurstRate(burst, 17.5, 2, 2.5), 17.5 + 2.5 * 35 / std::sqrt(28.0) * 0.9);
}

TEST(Burst, OnlyTheLastWindowCounts) {
  std::vector<double> series(kBurstWindow, 80.0);
  std::vector<double> spiked = {80, 800, 80};  // a burst older than the window
  spiked.insert(spiked.end(), series.begin(), series.end());
  EXPECT_DOUBLE_EQ(BurstRate(spiked, 80, 1, 2.5), 80);
  series[10] = 800;  // the same burst within it
  EXPECT_GT(BurstRate(series, 80, 1, 2.5), 80 + 2.5 * 700 / std::sqrt(kBurstWindow - 1.0) - 1e-9);
}

// Rates are Prometheus's answers: finite, but as large as a double. The allowance stays a number
// the planners can refuse as infeasible, never an infinity.
TEST(Burst, AnAbsurdRateGivesAFiniteAllowance) {
  for (double big : {1e300, std::numeric_limits<double>::max()}) {
    std::vector<double> series;
    for (int k = 0; k < 30; ++k) series.push_back(k % 2 == 0 ? 0 : big);
    const double planned = BurstRate(series, big, 1, 10);
    EXPECT_TRUE(std::isfinite(planned)) << big;
    EXPECT_GE(planned, big);
  }
}

TEST(Burst, TheLeadIsAnIntervalAndTheSlowestStartUpInWholeIntervals) {
  model::PipelineSpec spec;
  spec.interval_seconds = 10;
  EXPECT_EQ(LeadIntervals(spec), 1);  // no class: an interval
  spec.hardware_classes = {{.name = "gpu", .startup_seconds = 6}, {.name = "cpu"}};
  EXPECT_EQ(LeadIntervals(spec), 2);
  spec.hardware_classes[1].startup_seconds = 25;
  EXPECT_EQ(LeadIntervals(spec), 4);  // 35 s
  spec.interval_seconds = 60;
  spec.hardware_classes = {{.name = "gpu", .startup_seconds = 60}};
  EXPECT_EQ(LeadIntervals(spec), 2);
}

}  // namespace
}  // namespace pipescale::reconciler
