// The power of two choices, weighted by planned capacity: its properties over many draws.
#include "router/picker.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace pipescale::router {
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

}  // namespace
}  // namespace pipescale::router
