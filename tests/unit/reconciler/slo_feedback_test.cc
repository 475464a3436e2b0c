// The clients' feedback: a path that left more than 1% of its last minute unanswered is planned
// for more, once per quiet time, never for a surge's misses, and falls back while it meets it.
#include "reconciler/slo_feedback.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "api/deployment_view.h"
#include "reconciler/demand.h"

namespace pipescale::reconciler {
namespace {

model::Pipeline TwoPaths() {
  model::Pipeline p;
  p.spec.interval_seconds = 10;
  p.spec.hardware_classes = {{.name = "gpu", .startup_seconds = 20}};
  p.spec.tasks = {{.name = "t", .variants = {{.name = "v"}}}};
  p.spec.paths = {{.name = "a", .tasks = {"t"}, .slo_ms = 100},
                  {.name = "b", .tasks = {"t"}, .slo_ms = 100}};
  return p;
}

double Of(const Headroom& h, const std::string& path) {
  auto it = h.paths.find(path);
  return it == h.paths.end() ? 1 : it->second.headroom;
}

model::MetricsSnapshot Unanswered(double a, double b = 0) {
  model::MetricsSnapshot m;
  m.path_error_share = {{"a", a}, {"b", b}};
  return m;
}

TEST(PathMissed, IsMoreThanOnePercentUnanswered) {
  const model::Path path = TwoPaths().spec.paths[0];
  EXPECT_FALSE(PathMissed(path, {}));  // nothing measured is no miss
  EXPECT_FALSE(PathMissed(path, Unanswered(kMissedShare)));
  EXPECT_TRUE(PathMissed(path, Unanswered(0.02)));
  EXPECT_DOUBLE_EQ(MissedBy(path, Unanswered(0.3)), 0.3);
  EXPECT_FALSE(PathMissed(path, Unanswered(0, 0.5)));  // another path's
  EXPECT_FALSE(PathMissed(path, Unanswered(std::nan(""))));
  EXPECT_DOUBLE_EQ(MissedBy(path, Unanswered(std::numeric_limits<double>::infinity())), 1);
  // The answered requests' latency is not read (coarse buckets).
  model::MetricsSnapshot slow;
  slow.path_latency_ms["a"] = 500;
  EXPECT_FALSE(PathMissed(path, slow));
}

// The gauge's values: every path of the spec, 1 where none was raised; a stored path the spec
// no longer has is not exported.
TEST(HeadroomByPath, NamesEveryPathOfTheSpec) {
  Headroom h;
  h.paths["a"] = {.headroom = 1.3, .raised_from = 1};
  h.paths["gone"] = {.headroom = 1.8, .raised_from = 1.2};
  const std::map<std::string, double> expected = {{"a", 1.3}, {"b", 1}};
  EXPECT_EQ(HeadroomByPath(TwoPaths().spec, h), expected);
}

TEST(StepHeadroom, RaisesAMissedPathByItsMissWithinBoundsThenWaitsForTheCapacity) {
  const model::Pipeline p = TwoPaths();
  const Headroom first = StepHeadroom(p, Unanswered(0.2), 1000, {});
  EXPECT_DOUBLE_EQ(Of(first, "a"), 1.2);
  EXPECT_DOUBLE_EQ(Of(first, "b"), 1);
  // The window, an interval and the start-up.
  EXPECT_DOUBLE_EQ(first.quiet_until, 1000 + kFeedbackWindowSeconds + 10 + 20);
  EXPECT_DOUBLE_EQ(Of(StepHeadroom(p, Unanswered(0.02), 1000, {}), "a"), 1 + kMinStep);
  EXPECT_DOUBLE_EQ(Of(StepHeadroom(p, Unanswered(0.9), 1000, {}), "a"), 1 + kMaxStep);
  // Within the quiet time the same miss raises nothing, a larger one raises from before.
  EXPECT_EQ(StepHeadroom(p, Unanswered(0.2), 1080, first), first);
  const Headroom larger = StepHeadroom(p, Unanswered(0.4), 1080, first);
  EXPECT_DOUBLE_EQ(Of(larger, "a"), 1.4);
  EXPECT_DOUBLE_EQ(larger.quiet_until, first.quiet_until);
  const Headroom again = StepHeadroom(p, Unanswered(0.2), 1090, first);
  EXPECT_DOUBLE_EQ(Of(again, "a"), 1.2 * 1.2);
  EXPECT_GT(again.quiet_until, first.quiet_until);
}

TEST(StepHeadroom, MissesOfASurgeRaiseNothing) {
  const model::Pipeline p = TwoPaths();
  Headroom h;
  HoldRaises(1000, h);
  EXPECT_DOUBLE_EQ(h.held_until, 1000 + kFeedbackWindowSeconds);
  HoldRaises(1002, h);  // not rewritten at every look of the surge
  EXPECT_DOUBLE_EQ(h.held_until, 1000 + kFeedbackWindowSeconds);
  EXPECT_DOUBLE_EQ(Of(StepHeadroom(p, Unanswered(0.3), 1050, h), "a"), 1);
  EXPECT_DOUBLE_EQ(Of(StepHeadroom(p, Unanswered(0.3), 1060, h), "a"), 1.3);
}

TEST(StepHeadroom, NeverPassesItsCapAndFallsBackToOneWhileTheSloIsMet) {
  const model::Pipeline p = TwoPaths();
  Headroom h;
  double now = 0;
  for (int i = 0; i < 50; ++i, now += 1000) h = StepHeadroom(p, Unanswered(0.5), now, h);
  EXPECT_DOUBLE_EQ(Of(h, "a"), kMaxHeadroom);
  double last = Of(h, "a");
  int intervals = 0;
  while (Of(h, "a") > 1) {
    h = StepHeadroom(p, Unanswered(0.005), now += 10, h);
    EXPECT_LT(Of(h, "a"), last);
    last = Of(h, "a");
    ++intervals;
  }
  // kHeadroomFallPerMinute of the rate each minute, an interval at a time (one more where the
  // sum of the steps rounds just short).
  EXPECT_NEAR(intervals, (kMaxHeadroom - 1) / kHeadroomFallPerMinute * 6, 1);
  EXPECT_TRUE(h.paths.empty());  // a path at 1 is not kept
}

// Property: over any measurements the headroom stays within [1, kMaxHeadroom], rises only on a
// miss and outside a surge's window, at most once per quiet time but for a larger miss, and
// falls only on a met interval.
TEST(StepHeadroom, StaysWithinItsRangeAndMovesOnlyWithTheClients) {
  const model::Pipeline p = TwoPaths();
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> share(0, 0.08);
  std::bernoulli_distribution surge(0.02);
  Headroom h;
  for (double now = 0; now < 50000; now += 10) {
    if (surge(rng)) HoldRaises(now, h);
    const model::MetricsSnapshot m = Unanswered(share(rng));
    const Headroom next = StepHeadroom(p, m, now, h);
    const double before = Of(h, "a"), after = Of(next, "a");
    ASSERT_GE(after, 1);
    ASSERT_LE(after, kMaxHeadroom);
    if (after > before) {
      ASSERT_TRUE(PathMissed(p.spec.paths[0], m));
      ASSERT_GE(now, h.held_until);
      ASSERT_LE(after, before * (1 + kMaxStep) + 1e-12);
    }
    if (after < before) {
      ASSERT_FALSE(PathMissed(p.spec.paths[0], m));
    }
    h = next;
  }
}

TEST(StepHeadroom, ReadsAStoredValueOutOfRangeAsOneAndForgetsPathsNoLongerInTheSpec) {
  const model::Pipeline p = TwoPaths();
  for (double stored : {0.0, -3.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    Headroom before;
    before.paths["a"] = {.headroom = stored, .raised_from = stored};
    before.paths["gone"] = {.headroom = 1.5, .raised_from = 1};
    const Headroom h = StepHeadroom(p, Unanswered(0.2), 1000, before);
    EXPECT_DOUBLE_EQ(Of(h, "a"), 1.2) << stored;
    EXPECT_FALSE(h.paths.contains("gone"));
  }
}

// FA2 plans a path for its rate times its headroom and remembers the measured rate; the other
// optimizers keep no feedback.
TEST(StepHeadroom, FaTwoPlansAMissedPathForMoreThanItsRate) {
  const model::Pipeline p = TwoPaths();
  model::MetricsSnapshot late = Unanswered(0.2);
  late.path_rates_rps = {{"a", 40}, {"b", 40}};
  const auto& fa2 = *optimizer::FindOptimizer("fa2");
  const DemandStep s = StepDemand(p, fa2, {}, late, {}, 1000);
  EXPECT_DOUBLE_EQ(s.workload.path_rates_rps.at("a"), 40 * 1.2);
  EXPECT_DOUBLE_EQ(s.workload.path_rates_rps.at("b"), 40);
  // A reconcile within the interval does not step it again.
  const DemandStep extra = StepDemand(p, fa2, s.demand, late, {}, 1003);
  EXPECT_DOUBLE_EQ(extra.workload.path_rates_rps.at("a"), 40 * 1.2);
  EXPECT_EQ(extra.demand, s.demand);
  for (const char* other : {"loki", "mark", "kairos", "hpa"}) {
    const DemandStep o = StepDemand(p, *optimizer::FindOptimizer(other), {}, late, {}, 1000);
    EXPECT_TRUE(o.demand.headroom.paths.empty()) << other;
    EXPECT_DOUBLE_EQ(o.workload.path_rates_rps.at("a"), 40) << other;
  }
}

// While more than a tenth of the pipeline's pods are still starting, the misses are the
// reaction's: FA2 raises nothing for a window after; a few pods starting beside many serving
// are not that.
TEST(StepHeadroom, FaTwoRaisesNothingForMissesWhileItsCapacityStarts) {
  const model::Pipeline p = TwoPaths();
  auto pods = [](int replicas, int ready) {
    return std::map<std::string, api::DeploymentView>{
        {"d",
         api::ReadDeployment({{"metadata", {{"name", "d"}}},
                              {"spec", {{"replicas", replicas}}},
                              {"status", {{"replicas", replicas}, {"readyReplicas", ready}}}})}};
  };
  model::MetricsSnapshot late = Unanswered(0.2);
  late.path_rates_rps = {{"a", 40}, {"b", 40}};
  const auto& fa2 = *optimizer::FindOptimizer("fa2");
  const DemandStep starting = StepDemand(p, fa2, {}, late, pods(10, 5), 1000);
  EXPECT_DOUBLE_EQ(starting.workload.path_rates_rps.at("a"), 40);
  EXPECT_DOUBLE_EQ(starting.demand.headroom.held_until, 1000 + kFeedbackWindowSeconds);
  // Ready since: the window still holds the start's misses.
  const DemandStep after = StepDemand(p, fa2, starting.demand, late, pods(10, 10), 1030);
  EXPECT_DOUBLE_EQ(after.workload.path_rates_rps.at("a"), 40);
  const DemandStep later = StepDemand(p, fa2, after.demand, late, pods(10, 10), 1060);
  EXPECT_DOUBLE_EQ(later.workload.path_rates_rps.at("a"), 40 * 1.2);
  // One pod of twenty starting is a scale-out beside capacity that serves.
  EXPECT_DOUBLE_EQ(StepDemand(p, fa2, {}, late, pods(20, 19), 1000).workload.path_rates_rps.at("a"),
                   40 * 1.2);
}

}  // namespace
}  // namespace pipescale::reconciler
