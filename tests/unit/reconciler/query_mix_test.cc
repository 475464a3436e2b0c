// The query-size mix Kairos plans for: read from the router's histogram, kept while the
// measurement stays within kMixShift of it, replaced once when the sizes shift (F16).
#include "reconciler/query_mix.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "api/pipeline_parse.h"
#include "api/status_json.h"
#include "optimizer/registry.h"
#include "reconciler/memory.h"
#include "support/mutate.h"
#include "support/query_sizes.h"

namespace pipescale::reconciler {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using testing::Sizes;

SizeHistogram Histogram(const std::vector<int>& sizes) { return testing::SizeHistogram(sizes); }

std::map<int, double> AsMap(const Mix& mix) {
  std::map<int, double> out;
  for (const auto& q : mix) out[q.size] += q.weight;
  return out;
}

// A bucket's queries count at its upper bound: planned no smaller than they are (7 rows at 8,
// 9 at 10, 300 at 320), and never above the batch the models accept.
TEST(QueryMix, ABucketCountsAtItsUpperBound) {
  const SizeHistogram h = Histogram(Sizes({{1, 500}, {7, 200}, {9, 100}, {300, 150}, {5000, 50}}));
  const std::map<int, double> mix = AsMap(MeasuredMix(h, 1000));
  const std::map<int, double> want = {{1, 0.5}, {8, 0.2}, {10, 0.1}, {320, 0.15}, {1000, 0.05}};
  ASSERT_EQ(mix.size(), want.size());
  for (const auto& [size, share] : want) EXPECT_NEAR(mix.at(size), share, 1e-12) << size;
}

// Kairos's base class must serve the largest size planned for: one stray query of 900 rows among
// 2000 (0.05%) does not make it one.
TEST(QueryMix, AStrayLargeQueryIsLeftOut) {
  const Mix mix = MeasuredMix(Histogram(Sizes({{1, 1999}, {900, 1}})), 1000);
  ASSERT_EQ(mix.size(), 1u);
  EXPECT_EQ(mix[0].size, 1);
  EXPECT_DOUBLE_EQ(mix[0].weight, 1);
  EXPECT_EQ(MeasuredMix(Histogram(Sizes({{1, 1990}, {900, 10}})), 1000).size(), 2u);
}

TEST(QueryMix, TooFewQueriesSayNothing) {
  EXPECT_TRUE(
      MeasuredMix(Histogram(std::vector<int>(static_cast<size_t>(kMinMixQueries) - 1, 4)), 64)
          .empty());
  EXPECT_FALSE(
      MeasuredMix(Histogram(std::vector<int>(static_cast<size_t>(kMinMixQueries), 4)), 64).empty());
  EXPECT_TRUE(MeasuredMix({}, 64).empty());
}

// Prometheus extrapolates each bucket's increase on its own, so cumulative counts may dip; a
// dip counts as no queries, never as negative ones, and NaN bounds or counts are left out.
TEST(QueryMix, DippingOrBrokenCountsNeverMakeNegativeShares) {
  const SizeHistogram h = {{1, 600},          {2, 590},          {4, 1200},
                           {std::nan(""), 5}, {8, std::nan("")}, {kInf, 1200}};
  for (const auto& q : MeasuredMix(h, 64)) EXPECT_GE(q.weight, 0) << q.size;
  EXPECT_NEAR(AsMap(MeasuredMix(h, 64)).at(4), 0.5, 1e-12);
}

model::Pipeline WithLargest(int largest, Mix spec) {
  model::Pipeline p;
  p.spec.tasks = {{.name = "t", .variants = {{.name = "v", .max_batch = largest}}}};
  p.spec.query_sizes = std::move(spec);
  p.spec.router = model::RouterSpec{};
  return p;
}

// Property over random mixes and measurements: a measurement that stays put is planned for
// within kMixSettleSeconds, after which the planned mix is never more than kMixShift from it (so
// Kairos's f, at any limit s, is off by at most that); a step on the same measurement at the same
// time changes nothing (reconciling twice writes nothing new).
TEST(QueryMix, ASteadyMeasurementIsPlannedWithinTheShift) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> size(1, 64), count(0, 400);
  for (int round = 0; round < 500; ++round) {
    Mix spec;
    for (int k = 0; k < 3; ++k) spec.push_back({.size = size(rng), .weight = 1.0 + count(rng)});
    std::vector<int> sizes;
    for (int k = 0; k < 4; ++k) sizes.insert(sizes.end(), count(rng), size(rng));
    const model::Pipeline p = WithLargest(64, spec);
    const SizeHistogram h = Histogram(sizes);
    MixStep step = StepMix(p, {}, h, 1000);
    EXPECT_FALSE(step.changed);  // a first look never adopts
    EXPECT_EQ(step.planned, spec);
    for (double now : {1010.0, 1000 + kMixSettleSeconds}) step = StepMix(p, step.memory, h, now);
    if (step.measured.empty()) {
      EXPECT_EQ(step.planned, spec);
      continue;
    }
    EXPECT_LE(MixDistance(step.planned, step.measured, h), kMixShift + 1e-12);
    const MixStep again = StepMix(p, step.memory, h, 1000 + kMixSettleSeconds);
    EXPECT_FALSE(again.changed);
    EXPECT_EQ(again.planned, step.planned);
    EXPECT_EQ(again.memory, step.memory);
  }
}

// The router's histogram over a sliding window, as Prometheus's increase() over it reads.
class Window {
 public:
  explicit Window(int seconds) : seconds_(seconds) {}
  void Add(std::vector<int> second) {
    seconds_of_.push_back(std::move(second));
    if (static_cast<int>(seconds_of_.size()) > seconds_) seconds_of_.erase(seconds_of_.begin());
  }
  SizeHistogram Read() const {
    std::vector<int> all;
    for (const auto& s : seconds_of_) all.insert(all.end(), s.begin(), s.end());
    return Histogram(all);
  }

 private:
  int seconds_;
  std::vector<std::vector<int>> seconds_of_;
};

// Decisions every 10 s on a 2-minute window of `per_second` queries a second drawn by `draw`
// (told the second): the plans' mixes, one per decision, and how many times one was adopted.
struct Decided {
  std::vector<Mix> planned;
  int changes = 0;
};
template <typename Draw>
Decided Decisions(const model::Pipeline& p, int seconds, int per_second, Draw draw) {
  Window window(120);
  MixMemory memory;
  Decided run;
  for (int t = 1; t <= seconds; ++t) {
    std::vector<int> second(static_cast<size_t>(per_second));
    for (int& s : second) s = draw(t);
    window.Add(std::move(second));
    if (t % 10 != 0) continue;
    const MixStep step = StepMix(p, memory, window.Read(), t);
    run.changes += step.changed ? 1 : 0;
    run.planned.push_back(step.planned);
    memory = step.memory;
  }
  return run;
}

// An hour at 10 queries/s from one unchanging mix: the sampling noise never moves the measurement
// kMixShift from the mix adopted once it settled.
TEST(QueryMix, NoiseAloneNeverReplans) {
  std::mt19937 rng(11);
  std::discrete_distribution<int> pick({60, 25, 10, 5});
  const int sizes[] = {1, 4, 10, 32};
  const Decided run = Decisions(WithLargest(64, {{.size = 1, .weight = 1}}), 3600, 10,
                                [&](int) { return sizes[pick(rng)]; });
  EXPECT_EQ(run.changes, 1);  // the spec's "all ones" to the measured mix, once
}

// A step from small to large queries moves the 2-minute measurement for two minutes: the mix is
// adopted once, after the window has turned over, and lands within kMixShift / 2 of the new mix.
TEST(QueryMix, AStepChangeIsAdoptedOnceItHasSettled) {
  std::mt19937 rng(5);
  std::bernoulli_distribution large_before(0.1), large_after(0.8);
  const model::Pipeline p =
      WithLargest(64, {{.size = 1, .weight = 0.9}, {.size = 10, .weight = 0.1}});
  const Decided run = Decisions(p, 900, 20, [&](int t) {
    return (t <= 300 ? large_before(rng) : large_after(rng)) ? 10 : 1;
  });
  ASSERT_EQ(run.changes, 1);
  const Mix& last = run.planned.back();
  const Mix want = {{.size = 1, .weight = 0.2}, {.size = 10, .weight = 0.8}};
  EXPECT_LE(MixDistance(last, want, Histogram({1, 10})), kMixShift / 2) << MixText(last);
  // Not before the window turned over (two minutes after the step) and the measurement then
  // stood still for kMixSettleSeconds, give or take a decision.
  size_t first = 0;
  while (run.planned[first] == run.planned.front()) ++first;
  EXPECT_GE(10.0 * static_cast<double>(first + 1), 300 + 120 + kMixSettleSeconds - 10);
}

// F16, Kairos section 8.4: RM2's queries come log-normal (the spec's mix, from the artifact's
// batch_size_pmf.csv), then Gaussian around 500. While they follow the spec nothing re-plans;
// the shift re-plans exactly once, to a different pool, without any online evaluation.
TEST(QueryMix, ADistributionShiftReplansRm2Once) {
  const auto parsed = api::ParsePipelineFile(std::string(PIPESCALE_SOURCE_DIR) +
                                             "/deploy/examples/kairos-rm2.yaml");
  ASSERT_TRUE(parsed.pipeline.has_value());
  const model::Pipeline& rm2 = *parsed.pipeline;
  std::vector<double> weights;
  for (const auto& q : rm2.spec.query_sizes) weights.push_back(q.weight);
  std::discrete_distribution<size_t> log_normal(weights.begin(), weights.end());
  std::normal_distribution<double> gaussian(500, 100);
  std::mt19937 rng(3);
  const Decided run = Decisions(rm2, 900, 40, [&](int t) {
    if (t <= 300) return rm2.spec.query_sizes[log_normal(rng)].size;
    return std::clamp(10 * static_cast<int>(std::lround(gaussian(rng) / 10)), 10, 1000);
  });
  EXPECT_EQ(run.changes, 1);
  const model::Workload load{{{"rank", 40}}};
  std::set<std::string> pools;  // each decision's pool, as "class x replicas, ..."
  for (const Mix& mix : run.planned) {
    model::Pipeline planned = rm2;
    planned.spec.query_sizes = mix;
    std::string pool;
    for (const auto& t : optimizer::Solve(planned, load, "kairos").tasks) {
      pool += t.hardware_class + " x" + std::to_string(t.replicas) + ", ";
    }
    pools.insert(pool);
  }
  EXPECT_EQ(pools.size(), 2u);  // one pool before the shift, one after
}

// An adopted mix stands for the spec it replaced: a new spec.querySizes is planned as written
// until the router's measurement settles away from it again, and without a router (nothing
// measures) the spec's mix is planned and nothing is kept.
TEST(QueryMix, ANewSpecOrNoRouterForgetsTheAdoptedMix) {
  model::Pipeline p = WithLargest(64, {{.size = 1, .weight = 1}});
  const SizeHistogram h = Histogram(Sizes({{10, 2000}}));
  MixStep step = StepMix(p, {}, h, 1000);
  step = StepMix(p, step.memory, h, 1000 + kMixSettleSeconds);
  ASSERT_TRUE(step.changed);
  EXPECT_EQ(StepMix(p, step.memory, h, 1100).planned, step.planned);

  model::Pipeline edited = p;
  edited.spec.query_sizes = {{.size = 4, .weight = 1}};
  const MixStep after_edit = StepMix(edited, step.memory, {}, 1100);
  EXPECT_EQ(after_edit.planned, edited.spec.query_sizes);
  EXPECT_TRUE(after_edit.memory.adopted.empty());

  model::Pipeline no_router = p;
  no_router.spec.router.reset();
  const MixStep alone = StepMix(no_router, step.memory, h, 1100);
  EXPECT_EQ(alone.planned, p.spec.query_sizes);
  EXPECT_TRUE(alone.measured.empty());
  EXPECT_EQ(alone.memory, MixMemory{});

  // A lower batch limit since: the adopted sizes are planned at most at the new limit.
  model::Pipeline smaller = p;
  smaller.spec.tasks[0].variants[0].max_batch = 8;
  const MixStep capped = StepMix(smaller, step.memory, {}, 1100);
  ASSERT_EQ(capped.planned.size(), 1u);
  EXPECT_EQ(capped.planned[0].size, 8);
}

// The adopted mix survives a restart in status.memory.queryMix, and anything else found there
// (the status is anyone's to edit) forgets it rather than plan for nonsense: 20,000 mutations of
// a good status, and some plain wrong values.
TEST(QueryMix, TheStatusKeepsTheAdoptedMixAndForgetsAnythingMalformed) {
  const optimizer::Descriptor& kairos = *optimizer::FindOptimizer("kairos");
  Memory memory;
  memory.demand.query_mix = {.adopted = {{.size = 1, .weight = 0.25}, {.size = 10, .weight = 0.75}},
                             .adopted_for = "spec"};
  const nlohmann::json status = api::StatusToJson({.memory = MemoryToStatus(memory, kairos)});
  // The status as read back (api/status_json.h drops what it cannot read), recalled.
  const auto recalled = [](const nlohmann::json& s, const optimizer::Descriptor& optimizer) {
    std::vector<std::string> dropped;
    return Recall(api::ReadStatus(s, "", &dropped), nullptr, optimizer);
  };
  EXPECT_EQ(recalled(status, kairos).demand.query_mix, memory.demand.query_mix);
  EXPECT_TRUE(recalled(status, *optimizer::FindOptimizer("mark"))
                  .demand.query_mix.adopted.empty());  // no use for it
  for (const char* wrong :
       {R"("1:3")", R"([{"size": 0, "weight": 1}])", R"([{"size": 1.5, "weight": 1}])",
        R"([{"size": 1, "weight": -1}])", R"([{"size": 1, "weight": 0}])", "[]",
        R"([{"size": 1, "weight": 1}, {"size": 1, "weight": 2}])",
        R"([{"size": 1, "weight": 1e9}])", R"([{"size": 99999, "weight": 1}])", R"([{"size": 1}])",
        "[1]"}) {
    nlohmann::json bad = status;
    bad["memory"]["queryMix"] = nlohmann::json::parse(wrong);
    EXPECT_TRUE(recalled(bad, kairos).demand.query_mix.adopted.empty()) << wrong;
  }
  std::mt19937 rng(23);
  const std::string text = status.dump();
  int kept = 0;
  for (int i = 0; i < 20000; ++i) {
    const auto mutated = nlohmann::json::parse(
        testing::Mutate(text, rng, 4, [&] { return static_cast<char>(rng() % 128); }), nullptr,
        false);
    for (const auto& q : recalled(mutated, kairos).demand.query_mix.adopted) {
      EXPECT_GE(q.size, 1);
      EXPECT_LE(q.size, limits::kMaxBatch);
      EXPECT_TRUE(std::isfinite(q.weight) && q.weight > 0);
      ++kept;
    }
  }
  EXPECT_GT(kept, 0);  // some mutations left a mix to read
}

}  // namespace
}  // namespace pipescale::reconciler
