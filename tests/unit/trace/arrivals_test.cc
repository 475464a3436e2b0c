// The clients' requests drawn from a seed: the same seed sends the same requests, the steps send
// Poisson arrivals at their rates and no other, and paths and sizes come by their weights.
#include "trace/arrivals.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace pipescale::trace {
namespace {

std::vector<Arrival> All(const Trace& trace, const Mix& mix, std::uint64_t seed) {
  std::vector<Arrival> out;
  ArrivalStream stream(trace, mix, seed);
  while (auto a = stream.Next()) out.push_back(*a);
  return out;
}

bool Same(const std::vector<Arrival>& a, const std::vector<Arrival>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].at_s != b[i].at_s || a[i].path != b[i].path || a[i].rows != b[i].rows ||
        a[i].step != b[i].step) {
      return false;
    }
  }
  return true;
}

const Mix kMix{.path_weights = {1, 3}, .sizes = {{1, 2}, {8, 1}}};

TEST(Arrivals, ASeedSendsTheSameRequestsAndAnotherSeedOthers) {
  const Trace t = *ParseTrace("8:60,27:90,8:90", 42);
  EXPECT_TRUE(Same(All(t, kMix, 42), All(t, kMix, 42)));
  EXPECT_FALSE(Same(All(t, kMix, 42), All(t, kMix, 43)));
}

// On random step traces: times ascend inside the trace, each in the step it says, and a step of
// rate 0 sends nothing.
TEST(Arrivals, EachRequestFallsInItsStepInTimeOrderOnRandomTraces) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 200; ++round) {
    Trace t;
    const int steps = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < steps; ++i) {
      const double rps = rng() % 3 == 0 ? 0 : std::uniform_real_distribution<double>(0.1, 50)(rng);
      t.steps.push_back({rps, std::uniform_real_distribution<double>(0.2, 20)(rng)});
    }
    double last = 0;
    for (const Arrival& a : All(t, {}, rng())) {
      ASSERT_GE(a.at_s, last);
      last = a.at_s;
      ASSERT_GE(a.step, 0);
      ASSERT_LT(a.step, steps);
      double start = 0;
      for (int i = 0; i < a.step; ++i) start += t.steps[i].seconds;
      ASSERT_GE(a.at_s, start);
      ASSERT_LT(a.at_s, start + t.steps[a.step].seconds);
      ASSERT_GT(t.steps[a.step].rps, 0);
      EXPECT_EQ(a.path, -1);
      EXPECT_EQ(a.rows, 1);
    }
  }
}

// A steady step's requests are Poisson: the count near rps x seconds, and the counts of its
// seconds as dispersed as their mean (variance over mean near 1), over many seeds.
TEST(Arrivals, AStepSendsPoissonArrivalsAtItsRate) {
  const Trace t{.steps = {{20, 500}}};
  double count = 0, dispersion = 0;
  constexpr int kSeeds = 20;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    std::vector<double> per_second(500, 0);
    const auto all = All(t, {}, seed);
    for (const Arrival& a : all) per_second[static_cast<size_t>(a.at_s)] += 1;
    count += static_cast<double>(all.size()) / kSeeds;
    double mean = 0, squares = 0;
    for (double n : per_second) mean += n / 500;
    for (double n : per_second) squares += (n - mean) * (n - mean) / 499;
    dispersion += squares / mean / kSeeds;
  }
  EXPECT_NEAR(count, 10000, 5 * std::sqrt(10000.0 / kSeeds));
  EXPECT_NEAR(dispersion, 1, 0.05);
}

TEST(Arrivals, PathsAndSizesComeByTheirWeights) {
  const Trace t{.steps = {{100, 400}}};
  std::map<int, double> paths, rows;
  const auto all = All(t, kMix, 9);
  for (const Arrival& a : all) {
    paths[a.path] += 1;
    rows[a.rows] += 1;
  }
  const auto n = static_cast<double>(all.size());
  ASSERT_EQ(paths.size(), 2u);
  ASSERT_EQ(rows.size(), 2u);
  // 5 standard deviations of a binomial share of n.
  const double tolerance = 5 * std::sqrt(0.25 / n);
  EXPECT_NEAR(paths[1] / n, 0.75, tolerance);
  EXPECT_NEAR(rows[8] / n, 1.0 / 3, tolerance);
}

TEST(Arrivals, ACsvsTimesAreSentAsTheyAre) {
  const Trace t = *ParseTrace("csv:f", 1, "0.5\n2\n2\n7.25\n");
  const auto all = All(t, kMix, 3);
  ASSERT_EQ(all.size(), 4u);
  const double times[] = {0.5, 2, 2, 7.25};
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].at_s, times[i]);
    EXPECT_EQ(all[i].step, -1);
    EXPECT_GE(all[i].path, 0);
  }
}

}  // namespace
}  // namespace pipescale::trace
