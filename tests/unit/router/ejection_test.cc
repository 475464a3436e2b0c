// A pod's ejection record (router/routing_table.h): how long picks leave a pod out after it left
// calls unanswered, and what lets it back.
#include <gtest/gtest.h>

#include "router/routing_table.h"
#include "routing/walk.h"

namespace pipescale::router {
namespace {

constexpr double kNow = 1e6;

TEST(Ejection, LeavesAPodOutTwiceAsLongEachTimeInARow) {
  Ejection e;
  e.Eject(kNow);
  EXPECT_DOUBLE_EQ(e.until_ms, kNow + routing::kEjectMs);
  e.Eject(kNow);
  EXPECT_DOUBLE_EQ(e.until_ms, kNow + 2 * routing::kEjectMs);
  for (int i = 0; i < 10; ++i) e.Eject(kNow);
  EXPECT_DOUBLE_EQ(e.until_ms, kNow + 16 * routing::kEjectMs) << "at most 16 times the first";
}

// A pod that answers its readiness probe but not its calls (a hung model behind a live server):
// each probe lets it back, and each time the next call it leaves unanswered keeps it out twice as
// long. Only a call answered makes the next ejection the first again.
TEST(Ejection, AProbeAnsweredLetsThePodBackButOnlyACallAnsweredForgivesIt) {
  Ejection e;
  e.Eject(kNow);
  ASSERT_TRUE(e.StartProbe());
  EXPECT_FALSE(e.StartProbe()) << "one probe per pod";
  e.Readmit();
  EXPECT_EQ(e.until_ms, 0) << "back in picks";
  e.Eject(kNow);
  EXPECT_DOUBLE_EQ(e.until_ms, kNow + 2 * routing::kEjectMs);
  EXPECT_TRUE(e.StartProbe()) << "a later ejection starts a probe again";
  e.Readmit();
  e.Answered(kNow + 1);
  e.Eject(kNow);
  EXPECT_DOUBLE_EQ(e.until_ms, kNow + routing::kEjectMs);
}

}  // namespace
}  // namespace pipescale::router
