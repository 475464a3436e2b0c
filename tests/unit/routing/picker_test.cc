// The router's picker: the least loaded pod (join the shortest queue) by planned capacity, over
// every pod however many.
#include "routing/picker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace pipescale::routing {
namespace {

TEST(Picker, NoneOrOne) {
  EXPECT_EQ(PickPod({}, 0.5), -1);
  const std::vector<Candidate> one = {{1, 9}};
  EXPECT_EQ(PickPod(one, 0.99), 0);
}

// An independent statement of the rule: the pod that would finish the new request first in
// batches per unit of capacity, the fullest batch among those.
bool IsLeastLoaded(const std::vector<Candidate>& c, int pick) {
  const auto finish = [](const Candidate& x) {
    const int batches = (x.outstanding + x.batch) / x.batch;  // whole batches, the new one's too
    return static_cast<double>(batches * x.batch) / x.weight;
  };
  return std::ranges::all_of(c, [&](const Candidate& x) {
    if (finish(x) < finish(c[pick]) - 1e-9) return false;
    return finish(x) > finish(c[pick]) + 1e-9 || x.outstanding <= c[pick].outstanding;
  });
}

TEST(PickPod, ChoosesTheLeastLoadedOnRandomPools) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 5000; ++trial) {
    std::vector<Candidate> c(1 + rng() % 200);
    for (Candidate& x : c) {
      x = {.weight = 1 + static_cast<double>(rng() % 3),
           .outstanding = static_cast<int>(rng() % 6),
           .batch = 1 + static_cast<int>(rng() % 4)};
    }
    const int pick = PickPod(c, u(rng));
    ASSERT_GE(pick, 0);
    EXPECT_TRUE(IsLeastLoaded(c, pick)) << trial;
  }
  EXPECT_EQ(PickPod({}, 0.5), -1);
}

TEST(PickPod, FillsAFormingBatchBeforeStartingAnother) {
  // Batch 4 each: one request more still fits one batch on both; the one holding 2 fills first.
  const std::vector<Candidate> c = {{.weight = 1, .outstanding = 0, .batch = 4},
                                    {.weight = 1, .outstanding = 2, .batch = 4}};
  for (double u : {0.0, 0.5, 0.99}) EXPECT_EQ(PickPod(c, u), 1);
  // Full: the next request would start a second batch there.
  const std::vector<Candidate> full = {{.weight = 1, .outstanding = 0, .batch = 4},
                                       {.weight = 1, .outstanding = 4, .batch = 4}};
  EXPECT_EQ(PickPod(full, 0.5), 0);
}

TEST(PickPod, IdlePodsShareByCapacity) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  const std::vector<Candidate> idle = {{1, 0}, {1, 0}, {1, 0}, {1, 0}};
  std::vector<int> count(4, 0);
  for (int i = 0; i < 40000; ++i) ++count[PickPod(idle, u(rng))];
  for (int n : count) EXPECT_NEAR(n / 40000.0, 0.25, 0.01);
}

// However many pods: the one idle pod of a thousand busy ones is always found (two draws of a
// thousand would find it 0.2% of the time).
TEST(PickPod, EveryPodIsLookedAtHoweverMany) {
  std::vector<Candidate> many(1000, {1, 3});
  many[707].outstanding = 0;
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(PickPod(many, u(rng)), 707);
}

}  // namespace
}  // namespace pipescale::routing
