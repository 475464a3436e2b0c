#include "api/workload.h"

#include <gtest/gtest.h>

namespace pipescale::api {
namespace {

model::Pipeline TwoPaths() {
  model::Pipeline p;
  p.spec.paths = {{.name = "a", .tasks = {}, .slo_ms = 1, .weight = 1},
                  {.name = "b", .tasks = {}, .slo_ms = 1, .weight = 3}};
  return p;
}

TEST(MakeWorkload, SpreadsTheTotalByWeight) {
  const auto w = MakeWorkload(TwoPaths(), 40.0, {});
  ASSERT_TRUE(w.ok());
  EXPECT_DOUBLE_EQ(w->path_rates_rps.at("a"), 10);
  EXPECT_DOUBLE_EQ(w->path_rates_rps.at("b"), 30);
}

TEST(MakeWorkload, PerPathRatesWinAndTheRestIsSpread) {
  const auto w = MakeWorkload(TwoPaths(), 40.0, {{"b", 5}});
  ASSERT_TRUE(w.ok());
  EXPECT_DOUBLE_EQ(w->path_rates_rps.at("a"), 40);
  EXPECT_DOUBLE_EQ(w->path_rates_rps.at("b"), 5);
}

TEST(MakeWorkload, RejectsUnknownPathsAndMissingLoad) {
  auto unknown = MakeWorkload(TwoPaths(), std::nullopt, {{"c", 5}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message, "--path-rate: unknown path \"c\"");
  EXPECT_FALSE(MakeWorkload(TwoPaths(), std::nullopt, {}).ok());
  EXPECT_FALSE(MakeWorkload(TwoPaths(), -1.0, {}).ok());
}

// The floor is spread as a total is (by weight), and raises only the paths below their share.
TEST(AtLeastMinRate, RaisesEachPathToItsShareOfTheFloor) {
  model::Pipeline p = TwoPaths();
  const model::Workload measured{{{"a", 2}, {"b", 50}}};
  EXPECT_EQ(AtLeastMinRate(p, measured), measured);  // no floor: the load as measured
  p.spec.min_rate_rps = 40;
  const model::Workload floored = AtLeastMinRate(p, measured);
  EXPECT_DOUBLE_EQ(floored.path_rates_rps.at("a"), 10);
  EXPECT_DOUBLE_EQ(floored.path_rates_rps.at("b"), 50);
  EXPECT_EQ(AtLeastMinRate(p, {}), *MakeWorkload(p, 40.0, {}));  // before any measurement
}

TEST(ParseRateHistory, PeakPerStepAndGapsRepeatTheStepBefore) {
  const auto h = ParseRateHistory("time,rate\n# a comment\n0,10\n4,30\n9.9,20\n10,5\n35,7\n", 10);
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_EQ(*h, (std::vector<double>{30, 5, 5, 7}));
}

TEST(ParseRateHistory, NamesTheLineOfABadRow) {
  EXPECT_EQ(ParseRateHistory("0,1\n1,x\n", 10).error().message,
            "line 2: expected time,rate (seconds, requests per second), got \"1,x\"");
  EXPECT_EQ(ParseRateHistory("0,1\n1,-2\n", 10).error().message, "line 2: the rate must be >= 0");
  EXPECT_EQ(ParseRateHistory("5,1\n1,2\n", 10).error().message,
            "line 2: time 1 is before the previous line's");
  EXPECT_FALSE(ParseRateHistory("time,rate\n", 10).ok());
}

}  // namespace
}  // namespace pipescale::api
