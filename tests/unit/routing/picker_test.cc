// The router's picker: the least loaded pod (join the shortest queue) up to kScanAll pods, the
// power of two choices past it, both weighted by planned capacity.
#include "routing/picker.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace pipescale::routing {
namespace {

TEST(Picker, NoneOrOne) {
  EXPECT_EQ(PickOfTwo({}, 0.5, 0.5), -1);
  const std::vector<Candidate> one = {{1, 9}};
  EXPECT_EQ(PickOfTwo(one, 0.99, 0.1), 0);
}

TEST(Picker, OfTheTwoDrawnTheLessLoadedPerUnitOfCapacityWins) {
  // u1 draws the first (weight 1), u2 the second (weight 2) among the rest.
  const std::vector<Candidate> c = {{1, 3}, {2, 4}};
  EXPECT_EQ(PickOfTwo(c, 0.1, 0.5), 1);  // 4/2 < 3/1
  const std::vector<Candidate> d = {{1, 1}, {2, 4}};
  EXPECT_EQ(PickOfTwo(d, 0.1, 0.5), 0);  // 1/1 < 4/2
}

// With nothing outstanding, pods get requests in proportion to their planned capacity (the
// first draw decides on ties), and the most loaded pod is never chosen when others exist.
TEST(Picker, SharesFollowCapacityAndTheBusiestIsAvoided) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  const std::vector<Candidate> idle = {{1, 0}, {3, 0}};
  int heavy = 0;
  for (int i = 0; i < 40000; ++i) heavy += PickOfTwo(idle, u(rng), u(rng)) == 1;
  EXPECT_NEAR(heavy / 40000.0, 0.75, 0.01);

  const std::vector<Candidate> busy = {{1, 1}, {1, 2}, {1, 9}};
  for (int i = 0; i < 10000; ++i) EXPECT_NE(PickOfTwo(busy, u(rng), u(rng)), 2);
}

// An independent statement of the rule: the pod that would finish the new request first in
// batches per unit of capacity, the fullest batch among those.
bool IsLeastLoaded(const std::vector<Candidate>& c, int pick) {
  const auto finish = [](const Candidate& x) {
    return static_cast<double>((x.outstanding + x.batch) / x.batch) * x.batch / x.weight;
  };
  for (const Candidate& x : c) {
    if (finish(x) < finish(c[pick]) - 1e-9) return false;
    if (finish(x) <= finish(c[pick]) + 1e-9 && x.outstanding > c[pick].outstanding) return false;
  }
  return true;
}

TEST(PickPod, ChoosesTheLeastLoadedOnRandomPools) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 5000; ++trial) {
    std::vector<Candidate> c(1 + rng() % kScanAll);
    for (Candidate& x : c) {
      x = {.weight = 1 + static_cast<double>(rng() % 3),
           .outstanding = static_cast<int>(rng() % 6),
           .batch = 1 + static_cast<int>(rng() % 4)};
    }
    const int pick = PickPod(c, u(rng), u(rng));
    ASSERT_GE(pick, 0);
    EXPECT_TRUE(IsLeastLoaded(c, pick)) << trial;
  }
  EXPECT_EQ(PickPod({}, 0.5, 0.5), -1);
}

TEST(PickPod, FillsAFormingBatchBeforeStartingAnother) {
  // Batch 4 each: one request more still fits one batch on both; the one holding 2 fills first.
  const std::vector<Candidate> c = {{.weight = 1, .outstanding = 0, .batch = 4},
                                    {.weight = 1, .outstanding = 2, .batch = 4}};
  for (double u : {0.0, 0.5, 0.99}) EXPECT_EQ(PickPod(c, u, u), 1);
  // Full: the next request would start a second batch there.
  const std::vector<Candidate> full = {{.weight = 1, .outstanding = 0, .batch = 4},
                                       {.weight = 1, .outstanding = 4, .batch = 4}};
  EXPECT_EQ(PickPod(full, 0.5, 0.5), 0);
}

TEST(PickPod, IdlePodsShareByCapacity) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  const std::vector<Candidate> idle = {{1, 0}, {1, 0}, {1, 0}, {1, 0}};
  std::vector<int> count(4, 0);
  for (int i = 0; i < 40000; ++i) ++count[PickPod(idle, u(rng), u(rng))];
  for (int n : count) EXPECT_NEAR(n / 40000.0, 0.25, 0.01);
}

TEST(PickPod, PastTheScanLimitItIsThePowerOfTwoChoices) {
  std::vector<Candidate> many(kScanAll + 1, {1, 3});
  many[7].outstanding = 0;  // the least loaded, which a scan would always find
  int found = 0;
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < 1000; ++i) {
    const double u1 = u(rng), u2 = u(rng);
    EXPECT_EQ(PickPod(many, u1, u2), PickOfTwo(many, u1, u2));
    found += PickPod(many, u1, u2) == 7;
  }
  EXPECT_LT(found, 200);  // two draws of 33 find it about 6% of the time
}

}  // namespace
}  // namespace pipescale::routing
