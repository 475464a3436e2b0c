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

}  // namespace
}  // namespace pipescale::api
