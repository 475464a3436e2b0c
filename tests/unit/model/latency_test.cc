#include "model/latency.h"

#include <gtest/gtest.h>

namespace pipescale::model {
namespace {

TEST(LatencyProfile, QuadraticEvaluates) {
  const LatencyProfile p{.quadratic = {.a = 0.5, .b = 2, .c = 10}};
  EXPECT_DOUBLE_EQ(p.Ms(1), 12.5);
  EXPECT_DOUBLE_EQ(p.Ms(4), 26);
  EXPECT_EQ(p.MaxBatch(32), 32);
}

TEST(LatencyProfile, TableInterpolatesAndExtrapolatesBelow) {
  const LatencyProfile p{.kind = LatencyProfile::Kind::kTable,
                         .points = {{2, 20}, {4, 30}, {8, 70}}};
  EXPECT_DOUBLE_EQ(p.Ms(2), 20);
  EXPECT_DOUBLE_EQ(p.Ms(3), 25);
  EXPECT_DOUBLE_EQ(p.Ms(6), 50);
  EXPECT_DOUBLE_EQ(p.Ms(1), 15);  // slope of the first segment
  EXPECT_EQ(p.MaxBatch(32), 8);   // no extrapolation upward
  EXPECT_EQ(p.MaxBatch(4), 4);
}

// Above the last point a table follows its last segment while it rises, and never falls below
// the last point: a table whose latency falls at its end (valid at every batch it lists) must not
// reach 0 for the larger batches an optimizer may ask about (a Kairos query size).
TEST(LatencyProfile, TableAboveItsLastPointNeverFallsBelowIt) {
  const LatencyProfile rising{.kind = LatencyProfile::Kind::kTable,
                              .points = {{2, 20}, {4, 30}, {8, 70}}};
  EXPECT_DOUBLE_EQ(rising.Ms(10), 90);
  const LatencyProfile falling{.kind = LatencyProfile::Kind::kTable,
                               .points = {{1, 90}, {2, 80}, {3, 70}}};
  EXPECT_DOUBLE_EQ(falling.Ms(2), 80);
  for (int b : {4, 10, 1000, 4096}) EXPECT_DOUBLE_EQ(falling.Ms(b), 70) << b;
}

TEST(LatencyProfile, SinglePointTableScalesLinearly) {
  const LatencyProfile p{.kind = LatencyProfile::Kind::kTable, .points = {{4, 40}}};
  EXPECT_DOUBLE_EQ(p.Ms(2), 20);
  EXPECT_DOUBLE_EQ(p.Ms(4), 40);
}

}  // namespace
}  // namespace pipescale::model
