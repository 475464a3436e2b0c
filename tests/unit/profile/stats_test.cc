#include "profile/stats.h"

#include <gtest/gtest.h>

#include <vector>

#include "profile/job.h"

namespace pipescale::profile {
namespace {

TEST(Stats, NearestRankPercentilesAndTheMean) {
  std::vector<double> samples;
  for (int i = 100; i >= 1; --i) samples.push_back(i);  // unsorted on purpose
  const Summary s = Summarize(samples);
  EXPECT_EQ(s.count, 100);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.p50_ms, 50);
  EXPECT_DOUBLE_EQ(s.mean_ms, 50.5);
  EXPECT_DOUBLE_EQ(s.p99_ms, 99);
  EXPECT_DOUBLE_EQ(s.max_ms, 100);
  // 200 samples: the p99 is the 198th, so two stragglers do not make it.
  std::vector<double> two_slow(198, 10.0);
  two_slow.push_back(500);
  two_slow.push_back(900);
  EXPECT_DOUBLE_EQ(Percentile(two_slow, 99), 10);
  EXPECT_DOUBLE_EQ(Percentile(two_slow, 100), 900);
}

TEST(Stats, FewAndNoSamples) {
  const std::vector<double> one = {7};
  EXPECT_DOUBLE_EQ(Summarize(one).p99_ms, 7);
  EXPECT_DOUBLE_EQ(Summarize(one).p50_ms, 7);
  EXPECT_EQ(Summarize({}).count, 0);
  EXPECT_DOUBLE_EQ(Percentile({}, 50), 0);
  const std::vector<double> two = {1, 3};
  EXPECT_DOUBLE_EQ(Percentile(two, 50), 1);
  EXPECT_DOUBLE_EQ(Summarize(two).mean_ms, 2);
}

TEST(Stats, StatisticNames) {
  const Summary s{.count = 3, .p50_ms = 1, .mean_ms = 2, .p99_ms = 3};
  for (const char* name : {"mean", "p50", "p99"}) {
    auto parsed = ParseStatistic(name);
    ASSERT_TRUE(parsed.ok()) << name;
    EXPECT_STREQ(StatisticName(*parsed), name);
  }
  EXPECT_DOUBLE_EQ(Pick(s, *ParseStatistic("p50")), 1);
  EXPECT_DOUBLE_EQ(Pick(s, *ParseStatistic("mean")), 2);
  EXPECT_DOUBLE_EQ(Pick(s, *ParseStatistic("p99")), 3);
  auto bad = ParseStatistic("p95");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "must be mean, p50 or p99, got \"p95\"");
}

TEST(Batches, AllPowersOfTwoAndLists) {
  EXPECT_EQ(*ParseBatches("all", 4), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(*ParseBatches("pow2", 12), (std::vector<int>{1, 2, 4, 8, 12}));
  EXPECT_EQ(*ParseBatches("pow2", 16), (std::vector<int>{1, 2, 4, 8, 16}));
  EXPECT_EQ(*ParseBatches("pow2", 1), (std::vector<int>{1}));
  EXPECT_EQ(*ParseBatches("8,1,4,4", 8), (std::vector<int>{1, 4, 8}));
  auto outside = ParseBatches("1,9", 8);
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.error().message,
            "--batches: batch size 9 is outside [1, 8] (the variant's batchSize.max)");
  for (const char* bad : {"", "1,,2", "two", "1.5", "0x4", "-1"}) {
    EXPECT_FALSE(ParseBatches(bad, 8).ok()) << bad;
  }
}

}  // namespace
}  // namespace pipescale::profile
