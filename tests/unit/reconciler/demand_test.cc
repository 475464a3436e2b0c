// The planners' memory between decisions: advanced once per interval, bounded, and only what
// the optimizer's descriptor asks for.
#include "reconciler/demand.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "api/deployment.h"
#include "api/deployment_view.h"
#include "optimizer/pool.h"
#include "reconciler/burst.h"

namespace pipescale::reconciler {
namespace {

model::Pipeline OnePath() {
  model::Pipeline p;
  p.spec.interval_seconds = 10;
  p.spec.tasks = {{.name = "t", .variants = {{.name = "v"}}}};
  p.spec.paths = {{.name = "p", .tasks = {"t"}, .slo_ms = 100}};
  return p;
}

model::MetricsSnapshot Rate(double rps, double p99_ms = 0) {
  model::MetricsSnapshot m{.path_rates_rps = {{"p", rps}}};
  if (p99_ms > 0) m.path_latency_ms["p"] = p99_ms;
  return m;
}

const optimizer::Descriptor& Named(const char* name) { return *optimizer::FindOptimizer(name); }

// Loki remembers an EWMA advanced once per interval, and plans for at least the highest rate
// measured over the scale-down window: a rise at once, a fall once the window has passed.
TEST(Demand, LokiPlansForTheWindowsPeakAndAnEwmaAdvancedOncePerInterval) {
  const model::Pipeline p = OnePath();  // interval 10 s, window 300 s: 30 intervals
  DemandStep first = StepDemand(p, Named("loki"), {}, Rate(100), {}, 1000);
  EXPECT_DOUBLE_EQ(first.workload.path_rates_rps.at("p"), 100);  // the first measurement
  DemandStep second = StepDemand(p, Named("loki"), first.demand, Rate(360), {}, 1010);
  EXPECT_DOUBLE_EQ(second.demand.rps.at("p"), 100 + (360 - 100) / 2.6);
  EXPECT_DOUBLE_EQ(second.workload.path_rates_rps.at("p"), 360);
  // An extra reconcile within the interval plans for the same demand and remembers nothing new.
  DemandStep extra = StepDemand(p, Named("loki"), second.demand, Rate(900), {}, 1012);
  EXPECT_DOUBLE_EQ(extra.workload.path_rates_rps.at("p"), second.workload.path_rates_rps.at("p"));
  EXPECT_EQ(extra.demand, second.demand);
  DemandStep later = second;
  for (int k = 1; k <= 30; ++k) {
    later = StepDemand(p, Named("loki"), later.demand, Rate(50), {}, 1010 + 10 * k);
    const double planned = later.workload.path_rates_rps.at("p");
    const double expected = k < 30 ? 360 : std::max(50.0, later.demand.rps.at("p"));
    EXPECT_DOUBLE_EQ(planned, expected) << k << " intervals after the peak";
  }
}

// Loki keeps to its running variants while some of their pods are not Ready, and counts those
// against the pods a rolling change may have unavailable (optimizer/loki.h): the demand step
// reads both from the Deployments' Ready pods.
TEST(Demand, LokiKnowsWhenItsRunningVariantsStillStartPods) {
  model::Pipeline p = OnePath();
  p.name = "shop";
  p.spec.tasks[0].variants[0].profiles = {{.hardware_class = "cpu"}};
  const std::string name =
      api::DeploymentName(p, p.spec.tasks[0], p.spec.tasks[0].variants[0], "cpu");
  auto with_ready = [&](int ready) {
    return std::map<std::string, api::DeploymentView>{
        {name, api::ReadDeployment({{"metadata", {{"name", name}}},
                                    {"spec", {{"replicas", 3}}},
                                    {"status", {{"replicas", 3}, {"readyReplicas", ready}}}})}};
  };
  const DemandStep starting = StepDemand(p, Named("loki"), {}, Rate(10), with_ready(2), 1000);
  EXPECT_EQ(starting.input.running_variants,
            (std::map<std::string, int>{{optimizer::RunningKey("t", "v", "cpu"), 2}}));
  EXPECT_EQ(starting.input.pods_starting, 1);
  EXPECT_EQ(StepDemand(p, Named("loki"), {}, Rate(10), with_ready(3), 1000).input.pods_starting, 0);
}

// hpa reads what the HPA does: each pool's replicas and Ready pods from its Deployment, and the
// busy share the pods measured; fa2 reads none of it.
TEST(Demand, HpaReadsTheReplicasReadyPodsAndUtilisationOfEachPool) {
  model::Pipeline p = OnePath();
  p.name = "shop";
  p.spec.tasks[0].variants[0].profiles = {{.hardware_class = "cpu"}};
  const std::string name =
      api::DeploymentName(p, p.spec.tasks[0], p.spec.tasks[0].variants[0], "cpu");
  const std::map<std::string, api::DeploymentView> deployments = {
      {name, api::ReadDeployment({{"metadata", {{"name", name}}},
                                  {"spec", {{"replicas", 3}}},
                                  {"status", {{"replicas", 3}, {"readyReplicas", 2}}}})}};
  model::MetricsSnapshot m = Rate(10);
  m.utilization["t/cpu"] = 0.8;
  const DemandStep hpa = StepDemand(p, Named("hpa"), {}, m, deployments, 1000);
  EXPECT_EQ(hpa.input.running, (std::map<std::string, int>{{"t/cpu", 3}}));
  EXPECT_EQ(hpa.input.ready, (std::map<std::string, int>{{"t/cpu", 2}}));
  EXPECT_EQ(hpa.input.utilization, (std::map<std::string, double>{{"t/cpu", 0.8}}));
  const DemandStep fa2 = StepDemand(p, Named("fa2"), {}, m, deployments, 1000);
  EXPECT_TRUE(fa2.input.utilization.empty());
  EXPECT_TRUE(fa2.input.running.empty());
}

// spec.minRate raises what is planned for, never what is remembered: Loki's EWMA and MArk's
// series follow the load measured, so the floor does not linger in them once the load passes it.
TEST(Demand, TheMinimumRateIsPlannedForAndNotRemembered) {
  model::Pipeline p = OnePath();
  p.spec.min_rate_rps = 50;
  for (const char* name : {"fa2", "loki", "mark"}) {
    const DemandStep s = StepDemand(p, Named(name), {}, Rate(10), {}, 1000);
    EXPECT_DOUBLE_EQ(s.workload.path_rates_rps.at("p"), 50) << name;
    EXPECT_EQ(StepDemand(p, Named(name), {}, Rate(80), {}, 1000).workload.path_rates_rps.at("p"),
              80)
        << name;
  }
  EXPECT_DOUBLE_EQ(StepDemand(p, Named("loki"), {}, Rate(10), {}, 1000).demand.rps.at("p"), 10);
  EXPECT_EQ(StepDemand(p, Named("mark"), {}, Rate(10), {}, 1000).demand.series.at("p"),
            std::vector<double>{10});
}

// Measured multiplicative factors replace the spec's for Loki only within the range the spec
// may state: a Prometheus answer of 0, below or 1e300 is not a factor to plan with.
TEST(Demand, MeasuredFactorsAreUsedWithinTheSpecsRange) {
  model::Pipeline p = OnePath();
  p.spec.tasks[0].variants[0].multiplicative_factor = 2;
  const auto factor_with = [&](double measured) {
    model::MetricsSnapshot m = Rate(10);
    m.multiplicative_factors["t/v"] = measured;
    model::Pipeline used = p;
    UseMeasured(used, Named("loki"), m, StepDemand(p, Named("loki"), {}, m, {}, 1000));
    return used.spec.tasks[0].variants[0].multiplicative_factor;
  };
  EXPECT_DOUBLE_EQ(factor_with(3), 3);
  EXPECT_DOUBLE_EQ(factor_with(0), 2);
  EXPECT_DOUBLE_EQ(factor_with(-4), 2);
  EXPECT_DOUBLE_EQ(factor_with(1e300), 100);
}

TEST(Demand, MarkKeepsOneRatePerIntervalBounded) {
  const model::Pipeline p = OnePath();
  Demand d;
  for (int k = 0; k < 3000; ++k) {
    d = StepDemand(p, Named("mark"), d, Rate(k), {}, 1000 + 10.0 * k).demand;
    d = StepDemand(p, Named("mark"), d, Rate(-1), {}, 1005 + 10.0 * k).demand;  // within it
  }
  ASSERT_EQ(d.series.at("p").size(), 2880u);
  EXPECT_EQ(d.series.at("p").back(), 2999);
  EXPECT_EQ(d.series.at("p").front(), 3000 - 2880);
}

TEST(Demand, TheGuardActsOnALatePathThenWaits) {
  model::Pipeline p = OnePath();
  p.spec.hardware_classes = {{.name = "cpu", .startup_seconds = 50}};
  const DemandStep late = StepDemand(p, Named("mark"), {}, Rate(10, 150), {}, 1000);
  EXPECT_TRUE(late.input.late_paths.contains("p"));
  EXPECT_DOUBLE_EQ(late.demand.guard_quiet_until, 1050);  // the startup beats 3 intervals
  const DemandStep quiet = StepDemand(p, Named("mark"), late.demand, Rate(10, 150), {}, 1040);
  EXPECT_TRUE(quiet.input.late_paths.empty());
}

TEST(Demand, AnOptimizerWithoutMemoryRemembersNothing) {
  const model::Pipeline p = OnePath();
  const DemandStep s = StepDemand(p, Named("hpa"), {}, Rate(10, 500), {}, 1000);
  EXPECT_TRUE(s.demand.rps.empty());
  EXPECT_TRUE(s.demand.series.empty());
  EXPECT_TRUE(s.input.late_paths.empty());
  EXPECT_DOUBLE_EQ(s.workload.path_rates_rps.at("p"), 10);
}

// FA2 keeps the last kBurstWindow rates per path and, with an allowance set, plans for the
// measured rate plus the allowance over them (burst.h); at 0 (the default), for the rate.
TEST(Demand, FaTwoPlansForTheRatePlusItsRises) {
  model::Pipeline p = OnePath();
  p.spec.hardware_classes = {{.name = "cpu", .startup_seconds = 6}};
  p.spec.behavior.burst_allowance = 2.5;
  Demand memory;
  std::vector<double> seen;
  DemandStep s;
  for (int k = 0; k < 40; ++k) {
    const double rps = k % 3 == 0 ? 150 : 100;
    seen.push_back(rps);
    s = StepDemand(p, Named("fa2"), memory, Rate(rps), {}, 1000 + 10 * k);
    memory = s.demand;
  }
  ASSERT_EQ(memory.series.at("p").size(), kBurstWindow);
  EXPECT_TRUE(std::equal(seen.end() - kBurstWindow, seen.end(), memory.series.at("p").begin()));
  const double planned = s.workload.path_rates_rps.at("p");
  EXPECT_DOUBLE_EQ(planned, BurstRate(memory.series.at("p"), seen.back(), 2, 2.5));
  EXPECT_GT(planned, seen.back());
  p.spec.behavior.burst_allowance = 0;
  EXPECT_DOUBLE_EQ(
      StepDemand(p, Named("fa2"), memory, Rate(100), {}, 1400).workload.path_rates_rps.at("p"),
      100);
}

// The batches Loki keeps are those the applied plan gave the Deployments that run now: a task
// the plan left at 0, or one no longer running, has none to keep.
TEST(Demand, AppliedBatchesAreThoseOfTheRunningDeployments) {
  model::AppliedPlan applied;
  applied.plan.tasks = {
      {.task = "a", .variant = "big", .hardware_class = "gpu", .replicas = 2, .batch_size = 4},
      {.task = "a", .variant = "small", .hardware_class = "gpu", .replicas = 0, .batch_size = 2},
      {.task = "b", .variant = "v", .hardware_class = "cpu", .replicas = 1, .batch_size = 8}};
  const std::map<std::string, int> running = {{optimizer::RunningKey("a", "big", "gpu"), 2},
                                              {optimizer::RunningKey("a", "small", "gpu"), 0}};
  EXPECT_EQ(AppliedBatches(applied, running),
            (std::map<std::string, int>{{optimizer::RunningKey("a", "big", "gpu"), 4}}));
}

}  // namespace
}  // namespace pipescale::reconciler
