// The baselines as deployed: their names and knobs, the servers' batchers and queue timeouts,
// the floor, and the sweep that tunes them.
#include "gym/baseline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "gym/tune.h"
#include "support/gym_pipelines.h"

namespace pipescale::gym {
namespace {

using testing::Chain;
using testing::With;

TEST(BaselinePolicyTest, NamesReadBackAsWritten) {
  for (const char* name :
       {"hpa", "keda", "kpa", "fixed:3", "hpa@cpu", "keda:target=0.5", "kpa:batch=4",
        "hpa@cpu:target=0.6:batch=8", "fixed:2@cpu:batch=1", "hpa+door", "keda@cpu:batch=2+door"}) {
    auto parsed = ParseBaseline(name);
    ASSERT_TRUE(parsed.ok()) << name << ": " << parsed.error().message;
    EXPECT_EQ(BaselineName(*parsed), name);
  }
  const auto knobs = ParseBaseline("hpa@gpu:target=0.6:batch=8+door");
  EXPECT_EQ(knobs->knobs.hardware_class, "gpu");
  EXPECT_DOUBLE_EQ(knobs->knobs.target, 0.6);
  EXPECT_EQ(knobs->knobs.max_batch, 8);
  EXPECT_TRUE(knobs->door);
}

TEST(BaselinePolicyTest, AWrongKnobIsAnErrorNamingIt) {
  const std::pair<const char*, const char*> cases[] = {{"hpa:target=2", "target"},
                                                       {"hpa:target=x", "target"},
                                                       {"kpa:batch=0", "batch"},
                                                       {"keda:speed=3", "speed"},
                                                       {"fixed", "N"},
                                                       {"fixed:0", "N"},
                                                       {"hpa@:batch=2", "hardware"},
                                                       {"hpx", "not a baseline"}};
  for (const auto& [policy, named] : cases) {
    auto parsed = ParseBaseline(policy);
    ASSERT_FALSE(parsed.ok()) << policy;
    EXPECT_NE(parsed.error().message.find(named), std::string::npos)
        << policy << ": " << parsed.error().message;
  }
  auto run = Simulate(Chain({"a"}, 10, 1000), With("hpa@gpu", "5:10"));
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().message.find("no hardware class gpu"), std::string::npos);
}

// One replica at 150 requests/s of d(b) = 5 + 5 b ms: at batch 1 it serves 100/s and its queue
// would grow without bound; its server's batcher (the largest batch whose service twice over
// fits the 200 ms SLO: 8, 45 ms, 178/s) keeps up. At batch 1 the queue timeout turns away what
// could no longer finish in time (503s), so what is answered is still answered in time.
TEST(BaselineServerTest, BatchesKeepUpAndABoundedQueueAnswersInTime) {
  const auto pipeline = Chain({"a"}, 10, 200, 5);
  auto batching = Simulate(pipeline, With("fixed:1", "150:120"));
  ASSERT_TRUE(batching.ok()) << batching.error().message;
  EXPECT_GE(batching->paths.at("p").Attainment(), 0.99);
  auto single = Simulate(pipeline, With("fixed:1:batch=1", "150:120"));
  ASSERT_TRUE(single.ok());
  const PathOutcome& p = single->paths.at("p");
  EXPECT_GT(p.codes.at("503"), p.sent / 5) << "a third of the load is past what it serves";
  EXPECT_LT(p.p99_ms, 200 + 10);  // the timeout (190 ms) plus the batch
  EXPECT_GE(p.answered + p.codes.at("503"), p.sent * 99 / 100);
}

// spec.minRate's load is Ready before the first request: 400/s of d(b) = 5 + 5 b ms requests
// under a 25 ms SLO (batch 1: twice d(2) would not fit) at the 70% target is 6 replicas.
TEST(BaselineServerTest, TheFloorIsReadyBeforeTheFirstRequest) {
  auto pipeline = Chain({"a"}, 10, 25, 5);
  pipeline["spec"]["minRate"] = 400;
  for (const char* policy : {"hpa", "keda", "kpa"}) {
    auto run = Simulate(pipeline, With(policy, "1:60"));
    ASSERT_TRUE(run.ok()) << policy;
    ASSERT_FALSE(run->intervals.empty());
    EXPECT_EQ(run->intervals.front().replicas.at("a"), 6) << policy;
  }
}

// The sweep's pick keeps every path at the attainment asked and nothing it ran that did so cost
// less; run again under its name, it is the same run.
TEST(TuneTest, ThePickIsTheCheapestSettingThatKeepsTheAttainment) {
  const auto pipeline = Chain({"a", "b"}, 10, 120, 4);
  const Options options = With("", "20:120,120:120,20:120");
  auto tuned = Tune(pipeline, options, "hpa", {.attainment = 0.95});
  ASSERT_TRUE(tuned.ok()) << tuned.error().message;
  ASSERT_TRUE(tuned->best.has_value());
  const size_t grid = TuneGrid{}.targets.size() * TuneGrid{}.batches.size();
  ASSERT_GE(tuned->points.size(), grid);
  ASSERT_LE(tuned->points.size(), grid + 2) << "the second pass: a target either side";
  for (size_t i = grid; i < tuned->points.size(); ++i) {
    const TunePoint& p = tuned->points[i];
    const bool off_grid = std::ranges::none_of(
        TuneGrid{}.targets, [&](double t) { return std::abs(t - p.target) < 1e-9; });
    EXPECT_TRUE(off_grid) << p.policy << ": the second pass runs between the grid's targets";
  }
  EXPECT_GE(tuned->best->worst_attainment, 0.95);
  for (const TunePoint& p : tuned->points) {
    if (p.worst_attainment >= 0.95) {
      EXPECT_GE(p.cost, tuned->best->cost) << p.policy;
    }
  }
  Options again = options;
  again.policy = tuned->best->policy;
  auto rerun = Simulate(pipeline, again);
  ASSERT_TRUE(rerun.ok());
  EXPECT_DOUBLE_EQ(rerun->total_cost, tuned->best->cost);
  EXPECT_FALSE(Tune(pipeline, options, "hpa:batch=2").ok()) << "knobs are the sweep's";
  for (const char* policy : {"hpa", "keda@cpu", "kpa+door"}) EXPECT_TRUE(Tunable(policy)) << policy;
  for (const char* policy : {"fixed:2", "hpa:target=0.7", "fa2", "hpx"}) {
    EXPECT_FALSE(Tunable(policy)) << policy;
  }
}

}  // namespace
}  // namespace pipescale::gym
