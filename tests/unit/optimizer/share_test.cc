// DivideShares over generated pools: within the pool and each demand, nothing left that a claim
// under its demand could take, guarantees first, a lower priority above its guarantee only when
// every higher one has its demand, shares that never fall as the pool grows, restarts only for a
// gain worth them; and, for claims of one priority and one unit, the max-min fair division an
// exhaustive search finds.
#include "optimizer/share.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <random>

namespace pipescale::optimizer {
namespace {

int DemandOf(const Claim& c) { return c.demand.value_or(INT_MAX); }

double Used(const std::vector<Claim>& claims, const std::vector<int>& shares) {
  double used = 0;
  for (size_t i = 0; i < claims.size(); ++i) used += shares[i] * claims[i].unit;
  return used;
}

struct Instance {
  double capacity = 0;
  std::vector<Claim> claims;
};

// Up to 4 claims over 2 priorities, units of 1 or 2 (or all 1), demands up to 8 or unbounded,
// minimums up to 5 (or none).
Instance Generate(std::mt19937& rng, bool one_unit, bool one_priority, bool minimum = true) {
  std::uniform_int_distribution<int> count(1, 4), demand(0, 9), guaranteed(0, 4), unit(1, 2),
      priority(0, 1), capacity(0, 16), least(0, 5);
  Instance out{.capacity = static_cast<double>(capacity(rng)), .claims = {}};
  const int n = count(rng);
  for (int i = 0; i < n; ++i) {
    const int d = demand(rng);
    out.claims.push_back({.priority = one_priority ? 0 : priority(rng) * 100,
                          .guaranteed = guaranteed(rng),
                          .demand = d == 9 ? std::nullopt : std::optional<int>(d),
                          .held = 0,
                          .unit = one_unit ? 1.0 : unit(rng),
                          .minimum = minimum ? least(rng) : 0,
                          .value = minimum ? static_cast<double>(least(rng)) : 0});
  }
  return out;
}

TEST(DivideShares, GivesEqualPartsUntilADemandIsMet) {
  const std::vector<Claim> claims = {{.demand = std::nullopt}, {.demand = 2}, {.demand = 9}};
  EXPECT_EQ(DivideShares(12, claims, 1), (std::vector<int>{5, 2, 5}));
}

TEST(DivideShares, GuaranteesComeBeforePriority) {
  const std::vector<Claim> claims = {{.priority = 1000, .demand = std::nullopt},
                                     {.priority = 0, .guaranteed = 4, .demand = std::nullopt}};
  EXPECT_EQ(DivideShares(12, claims, 1), (std::vector<int>{8, 4}));
}

TEST(DivideShares, EqualPartsAreOfTheResourceNotOfReplicas) {
  const std::vector<Claim> claims = {{.demand = std::nullopt, .unit = 2},
                                     {.demand = std::nullopt, .unit = 1}};
  EXPECT_EQ(DivideShares(12, claims, 1), (std::vector<int>{3, 6}));
}

// Of one priority, replicas go first where they buy clearly more goodput; where they buy about
// as much (within kClearlyMore), in equal parts.
TEST(DivideShares, ServesWhereAReplicaBuysClearlyMoreFirst) {
  std::vector<Claim> claims = {{.demand = 9, .value = 10}, {.demand = 9, .value = 30}};
  EXPECT_EQ(DivideShares(12, claims, 1), (std::vector<int>{3, 9}));
  claims[0].value = 25;
  EXPECT_EQ(DivideShares(12, claims, 1), (std::vector<int>{6, 6}));
}

TEST(DivideShares, KeepsWhatRunsForASmallGain) {
  // Equal parts would take one replica from the first for the second: less than the gain asked.
  const std::vector<Claim> claims = {{.demand = std::nullopt, .held = 7},
                                     {.demand = std::nullopt, .held = 5}};
  EXPECT_EQ(DivideShares(12, claims, 2), (std::vector<int>{7, 5}));
  EXPECT_EQ(DivideShares(12, claims, 1), (std::vector<int>{6, 6}));
}

int LeastOf(const Claim& c) { return std::min(c.minimum, DemandOf(c)); }
// What a guarantee gives before anything else: the guarantee up to demand, with the claim's
// minimum when it is more.
int FloorOf(const Claim& c) {
  const int floor = std::min(c.guaranteed, DemandOf(c));
  return floor > 0 ? std::max(floor, LeastOf(c)) : 0;
}
// The least a claim short of its demand could have taken: one replica, or its minimum from none.
double NextStep(const Claim& c, int share) {
  return (share == 0 ? std::max(1, LeastOf(c)) : 1) * c.unit;
}

TEST(DivideShares, HoldsItsPropertiesOnGeneratedPools) {
  std::mt19937 rng(49);
  for (int trial = 0; trial < 4000; ++trial) {
    const Instance in = Generate(rng, trial % 2 == 0, false, trial % 3 != 0);
    const std::vector<int> shares = DivideShares(in.capacity, in.claims, 1);
    ASSERT_EQ(shares.size(), in.claims.size());
    const double used = Used(in.claims, shares);
    const double left = in.capacity - used;
    ASSERT_LE(used, in.capacity + 1e-9) << trial;
    double floors = 0;
    for (const Claim& c : in.claims) floors += FloorOf(c) * c.unit;
    for (size_t i = 0; i < in.claims.size(); ++i) {
      const Claim& c = in.claims[i];
      ASSERT_GE(shares[i], 0);
      ASSERT_LE(shares[i], DemandOf(c)) << trial;
      ASSERT_TRUE(shares[i] == 0 || shares[i] >= LeastOf(c)) << "a part too small " << trial;
      if (shares[i] < DemandOf(c)) {
        ASSERT_LT(left, NextStep(c, shares[i]) - 1e-9) << "a claim could take more " << trial;
      }
      if (floors <= in.capacity + 1e-9) {
        ASSERT_GE(shares[i], std::min(c.guaranteed, DemandOf(c))) << "guarantee " << trial;
      }
      if (shares[i] <= FloorOf(c)) continue;
      for (size_t j = 0; j < in.claims.size(); ++j) {
        const Claim& h = in.claims[j];
        if (h.priority <= c.priority || shares[j] == DemandOf(h)) continue;
        // A higher claim short of its demand: what it lacked did not fit even with what the
        // lower one was given past its guarantee.
        ASSERT_GT(NextStep(h, shares[j]), left + (shares[i] - FloorOf(c)) * c.unit - 1e-9)
            << "priority " << trial;
      }
    }
  }
}

// Of claims of one priority, those running their minimum are given it before the others.
TEST(DivideShares, APipelineRunningItsTasksKeepsThemBeforeAnotherStarts) {
  const std::vector<Claim> claims = {{.demand = 14, .held = 0, .minimum = 7},
                                     {.demand = 14, .held = 12, .minimum = 7}};
  EXPECT_EQ(DivideShares(12, claims, 1), (std::vector<int>{0, 12}));
  EXPECT_EQ(DivideShares(14, claims, 1), (std::vector<int>{7, 7}));
}

TEST(DivideShares, NoShareFallsAsThePoolGrows) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    Instance in = Generate(rng, true, trial % 3 == 0, false);
    const std::vector<int> before = DivideShares(in.capacity, in.claims, 1);
    const std::vector<int> after = DivideShares(in.capacity + 1, in.claims, 1);
    for (size_t i = 0; i < before.size(); ++i) ASSERT_GE(after[i], before[i]) << trial;
  }
}

TEST(DivideShares, NoShareFallsAsItsDemandGrows) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    Instance in = Generate(rng, trial % 2 == 0, false, false);
    const std::vector<int> before = DivideShares(in.capacity, in.claims, 1);
    Claim& grown = in.claims[trial % in.claims.size()];
    if (!grown.demand) continue;
    ++*grown.demand;
    const std::vector<int> after = DivideShares(in.capacity, in.claims, 1);
    ASSERT_GE(after[trial % in.claims.size()], before[trial % in.claims.size()]) << trial;
  }
}

// The max-min fair division by exhaustive search: of the divisions within the pool and the
// demands, the one whose shares, sorted, are lexicographically largest.
std::vector<int> ExhaustiveMaxMin(int capacity, const std::vector<Claim>& claims) {
  std::vector<int> best_sorted;
  std::vector<int> shares(claims.size(), 0);
  const std::function<void(size_t, int)> walk = [&](size_t i, int left) {
    if (i == claims.size()) {
      std::vector<int> sorted = shares;
      std::sort(sorted.begin(), sorted.end());
      if (best_sorted.empty() || sorted > best_sorted) best_sorted = sorted;
      return;
    }
    for (int s = 0; s <= std::min(left, DemandOf(claims[i])); ++s) {
      shares[i] = s;
      walk(i + 1, left - s);
    }
  };
  walk(0, capacity);
  return best_sorted;
}

TEST(DivideShares, IsTheMaxMinFairDivisionAnExhaustiveSearchFinds) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 1500; ++trial) {
    Instance in = Generate(rng, true, true, false);
    for (Claim& c : in.claims) c.guaranteed = 0;
    std::vector<int> shares = DivideShares(in.capacity, in.claims, 1);
    std::sort(shares.begin(), shares.end());
    ASSERT_EQ(shares, ExhaustiveMaxMin(static_cast<int>(in.capacity), in.claims)) << trial;
  }
}

TEST(DivideShares, TakesFromRunningPipelinesOnlyForTheGainAsked) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> held(0, 8), gain(1, 6);
  for (int trial = 0; trial < 3000; ++trial) {
    Instance in = Generate(rng, trial % 2 == 0, false);
    // Pods that run fit on their nodes, beside the guarantees of those that do not run them.
    double kept = 0;
    for (Claim& c : in.claims) {
      c.held = held(rng);
      const int floor =
          std::max(std::min(c.held, DemandOf(c)), std::min(c.guaranteed, DemandOf(c)));
      kept += (floor > 0 ? std::max(floor, LeastOf(c)) : 0) * c.unit;
    }
    if (kept > in.capacity) continue;
    const double min_gain = gain(rng);
    const std::vector<int> shares = DivideShares(in.capacity, in.claims, min_gain);
    double taken = 0;
    for (size_t i = 0; i < shares.size(); ++i) {
      const Claim& c = in.claims[i];
      taken += std::max(0, std::min(c.held, DemandOf(c)) - shares[i]) * c.unit;
    }
    ASSERT_TRUE(taken == 0 || taken >= min_gain) << trial;
    ASSERT_LE(Used(in.claims, shares), in.capacity + 1e-9);
  }
}

// A pipeline whose claim is split over two classes of one unit (its demand, guarantee and least
// divided between them, each replica worth the same) divides the pool as the whole claim does,
// and the parts get that share between them: each within its demand, each its least when the
// share holds both.
TEST(MergeClaims, AClaimSplitOverClassesOfOneUnitDividesAsTheWhole) {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 3000; ++trial) {
    const Instance in = Generate(rng, true, false);
    const Claim& whole = in.claims[0];
    const auto cut = [&](int n) { return std::uniform_int_distribution<int>(0, n)(rng); };
    Claim a = whole, b = whole;
    a.guaranteed = cut(whole.guaranteed);
    b.guaranteed = whole.guaranteed - a.guaranteed;
    a.minimum = cut(whole.minimum);
    b.minimum = whole.minimum - a.minimum;
    if (whole.demand) {
      a.demand = cut(*whole.demand);
      b.demand = *whole.demand - *a.demand;
    } else {
      a.demand = trial % 3 == 0 ? std::nullopt : std::optional<int>(cut(8));
    }
    std::vector<Claim> merged = in.claims;
    merged[0] = MergeClaims({a, b});
    ASSERT_EQ(merged[0].demand, whole.demand) << trial;
    const std::vector<int> shares = DivideShares(in.capacity, in.claims, 1);
    ASSERT_EQ(DivideShares(in.capacity, merged, 1), shares) << trial;
    const std::vector<int> parts = SplitShare(shares[0], {a, b});
    ASSERT_EQ(parts[0] + parts[1], shares[0]) << trial;
    ASSERT_LE(parts[0], DemandOf(a)) << trial;
    ASSERT_LE(parts[1], DemandOf(b)) << trial;
    if (shares[0] >= LeastOf(a) + LeastOf(b)) {
      ASSERT_GE(parts[0], LeastOf(a)) << trial;
      ASSERT_GE(parts[1], LeastOf(b)) << trial;
    }
  }
}

TEST(SplitShare, GivesEachPartItsLeastThenInProportionToItsDemand) {
  const std::vector<Claim> parts = {{.demand = 6, .minimum = 1}, {.demand = 2, .minimum = 1}};
  EXPECT_EQ(SplitShare(4, parts), (std::vector<int>{3, 1}));
  EXPECT_EQ(SplitShare(8, parts), (std::vector<int>{6, 2}));
  EXPECT_EQ(SplitShare(1, parts), (std::vector<int>{1, 0})) << "the first least that fits";
}

// Parts of different units: the merged claim's units are the parts' (the unit averaged over the
// replicas each needs), and a split spends no more units than the share holds.
TEST(MergeClaims, KeepsTheUnitsOfPartsOfDifferentUnits) {
  const std::vector<Claim> parts = {{.demand = 4, .unit = 1}, {.demand = 2, .unit = 2}};
  const Claim merged = MergeClaims(parts);
  EXPECT_EQ(merged.demand, 6);
  EXPECT_DOUBLE_EQ(*merged.demand * merged.unit, 8);
  const std::vector<int> split = SplitShare(3, parts);  // 4 units
  EXPECT_LE(split[0] * 1.0 + split[1] * 2.0, 3 * merged.unit + 1e-9);
  EXPECT_EQ(split, (std::vector<int>{2, 1}));
}

}  // namespace
}  // namespace pipescale::optimizer
