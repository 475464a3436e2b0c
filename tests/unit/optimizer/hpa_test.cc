#include "optimizer/hpa.h"

#include <gtest/gtest.h>

#include <cmath>

#include "optimizer/baseline_deployment.h"
#include "optimizer/pool.h"
#include "optimizer/problem.h"

namespace pipescale::optimizer {
namespace {

// One task, d(b) = 50 b + 50 ms: at batch 1 (the knob below) a replica serves 10 rps, 7 at the
// 70% target.
model::Pipeline OneTask(std::optional<int> max_replicas = std::nullopt) {
  model::Pipeline p;
  p.spec.hardware_classes = {{.name = "gpu", .cost_per_hour = 2, .max_replicas = max_replicas}};
  model::Variant v{.name = "v", .max_batch = 8};
  v.profiles.push_back({.hardware_class = "gpu", .latency = {.quadratic = {0, 50, 50}}});
  p.spec.tasks.push_back({.name = "m", .next = {}, .variants = {v}});
  p.spec.paths.push_back({.name = "only", .tasks = {"m"}, .slo_ms = 1000});
  return p;
}

// From scratch (nothing running): sized from the rate.
int Replicas(double rps, std::optional<int> max_replicas = std::nullopt) {
  const model::Plan plan = SolveHpa(OneTask(max_replicas), {{{"only", rps}}}, {}, {.max_batch = 1});
  EXPECT_EQ(plan.tasks[0].batch_size, 1);
  return plan.tasks[0].replicas;
}

// `running` replicas of which `ready` Ready, busy `busy_share` of the time on average (a 70%
// target): what the HPA asks for, whatever the rate.
int ReplicasAt(double busy_share, int ready, int running, double rps = 1000) {
  PlannerInput input;
  input.running[PoolKey("m", "gpu")] = running;
  input.ready[PoolKey("m", "gpu")] = ready;
  input.utilization[PoolKey("m", "gpu")] = busy_share;
  return SolveHpa(OneTask(), {{{"only", rps}}}, input, {.max_batch = 1}).tasks[0].replicas;
}

TEST(Hpa, FromScratchItSizesEachTaskToTheTarget) {
  for (double rps : {0.5, 7.0, 7.1, 20.0, 69.9, 70.0, 70.1}) {
    EXPECT_EQ(Replicas(rps), std::max(1, static_cast<int>(std::ceil(rps / 7 - 1e-9)))) << rps;
  }
}

// Where a client's query carries several rows (Kairos's querySizes) a request keeps a replica
// busy for d at its size: the HPA sees that as CPU per request. Queries of 1 and 3 rows, 1:1:
// (100 + 200) / 2 = 150 ms a request, 6.67 rps a replica, 4.67 at the target.
TEST(Hpa, QueriesOfSeveralRowsAreSizedByTheirMeanTime) {
  model::Pipeline p = OneTask();
  p.spec.query_sizes = {{.size = 1, .weight = 1}, {.size = 3, .weight = 1}};
  for (double rps : {1.0, 4.6, 4.7, 30.0}) {
    const model::Plan plan = SolveHpa(p, {{{"only", rps}}}, {}, {.max_batch = 1});
    EXPECT_EQ(plan.tasks[0].replicas, static_cast<int>(std::ceil(rps / (0.7 * 1000 / 150)))) << rps;
    EXPECT_DOUBLE_EQ(plan.tasks[0].latency_ms, 150);
  }
}

TEST(Hpa, WithinTheToleranceTheReplicasStay) {
  // 3 Ready replicas busy 70% of the time are at the target; +-10% of it changes nothing, more
  // does, whatever the rate says.
  EXPECT_EQ(ReplicasAt(0.7 * 1.09, 3, 3), 3);
  EXPECT_EQ(ReplicasAt(0.7 * 0.91, 3, 3), 3);
  EXPECT_EQ(ReplicasAt(0.84, 3, 3), 4);  // ceil(3 x 1.2)
  EXPECT_EQ(ReplicasAt(0.35, 3, 3), 2);  // ceil(3 x 0.5); the reconciler holds scale-downs
  EXPECT_EQ(ReplicasAt(0.35, 3, 3, 1e6), 2);
}

// Never on missing data: a task that runs and has no reading (no Ready pod, or no series) keeps
// its replicas, however high or low its rate.
TEST(Hpa, ARunningTaskWithoutAReadingKeepsItsReplicas) {
  for (double rps : {0.0, 5.0, 1e6}) {
    PlannerInput input;
    input.running[PoolKey("m", "gpu")] = 5;
    EXPECT_EQ(SolveHpa(OneTask(), {{{"only", rps}}}, input).tasks[0].replicas, 5) << rps;
    input.ready[PoolKey("m", "gpu")] = 0;
    input.utilization[PoolKey("m", "gpu")] = 0.9;
    EXPECT_EQ(SolveHpa(OneTask(), {{{"only", rps}}}, input).tasks[0].replicas, 5) << rps;
  }
  EXPECT_EQ(HpaUtilizationReplicas(std::nan(""), 3, 3, 0.7), std::nullopt);
}

// Pods not Ready yet count at 0% on a scale-up (rebalanceIgnored): 2 of 4 Ready at 90% are
// 45% over the four, below the target: no scale-up; 3 of 4 at 100% are 75% at a 50% target:
// ceil(4 x 1.5) = 6.
TEST(Hpa, PodsNotReadyCountAtNothingOnAScaleUp) {
  EXPECT_EQ(HpaUtilizationReplicas(0.9, 2, 4, 0.7), 4);
  EXPECT_EQ(HpaUtilizationReplicas(1.0, 3, 4, 0.5), 6);
  EXPECT_EQ(HpaUtilizationReplicas(1.0, 3, 4, 0.7), 4);  // 75% against 70%: within tolerance
}

// Against the definition, on generated readings with every pod Ready: the answer is the running
// count when the whole-percent usage is within 10% of the target, else the fewest replicas
// whose mean usage is at most the target.
TEST(Hpa, ItAsksForTheFewestReplicasThatBringUsageToTheTarget) {
  for (int ready = 1; ready <= 20; ready += 3) {
    for (double target : {0.5, 0.7, 0.9}) {
      for (double busy = 0; busy <= 1.5; busy += 0.013) {
        const int got = HpaUtilizationReplicas(busy, ready, ready, target).value_or(-1);
        const double usage = std::floor(busy * 100 + 1e-9);  // whole percent, truncated
        const double wanted = std::round(target * 100);
        const std::string at = std::to_string(busy) + " busy, " + std::to_string(ready) +
                               " ready, target " + std::to_string(target);
        if (std::abs(usage / wanted - 1) <= kHpaTolerance) {
          EXPECT_EQ(got, ready) << at;
          continue;
        }
        const double total = usage * ready;
        EXPECT_LE(total, got * wanted + 1e-6) << at;
        if (got > 1) {
          EXPECT_GT(total, (got - 1) * wanted - 1e-6) << at;
        }
      }
    }
  }
}

// Property: from any running count, a busier pool never asks for fewer replicas, and from
// scratch more demand never does; the answer stays within the class's limit.
TEST(Hpa, MoreDemandNeverAsksForFewerReplicas) {
  for (int running = 1; running <= 12; ++running) {
    int last = 0;
    for (double busy = 0; busy <= 2; busy += 0.01) {
      const int now = ReplicasAt(busy, running, running);
      EXPECT_GE(now, last) << running << " running, busy " << busy;
      EXPECT_GE(now, 1);
      last = now;
    }
  }
  int last = 0;
  for (double rps = 0; rps <= 200; rps += 0.7) {
    const int now = Replicas(rps, 15);
    EXPECT_GE(now, last) << rps << " rps";
    EXPECT_LE(now, 15);
    EXPECT_GE(now, 1);
    last = now;
  }
}

// Unless told otherwise it runs what an engineer deploys: the server's batcher at the largest
// batch whose service twice over fits the SLO (2 x d(9) = 1000 ms, capped at the variant's 8), a
// replica sized at full batches: 8 per 450 ms, 17.8 rps, 12.4 at the target.
TEST(Hpa, ByDefaultItSizesBatchingReplicas) {
  for (double rps : {1.0, 12.4, 12.5, 100.0}) {
    const model::Plan plan = SolveHpa(OneTask(), {{{"only", rps}}}, {});
    EXPECT_EQ(plan.tasks[0].batch_size, 8);
    EXPECT_DOUBLE_EQ(plan.tasks[0].latency_ms, 450);
    EXPECT_EQ(plan.tasks[0].replicas,
              std::max(1, static_cast<int>(std::ceil(rps / (0.7 * 8000 / 450)))))
        << rps;
  }
}

// The servers' queues the plan hands the pods are the baseline deployment's: its batcher's delay
// and its queue timeout where the server forms batches; none where the router does.
TEST(Hpa, ThePlanCarriesTheServersQueue) {
  model::Pipeline p = OneTask();
  const BaselineTask deployed = DeployBaseline(p, {}, {}).front();
  const model::Plan plan = SolveHpa(p, {{{"only", 5.0}}}, {});
  EXPECT_EQ(plan.tasks[0].server_queue,
            (model::ServerQueue{kBaselineQueueDelayMs, deployed.queue_timeout_ms}));
  EXPECT_GT(plan.tasks[0].server_queue.timeout_ms, 0);
  p.spec.tasks[0].variants[0].batch_env.clear();  // batchSize.formedBy: router
  EXPECT_EQ(SolveHpa(p, {{{"only", 5.0}}}, {}).tasks[0].server_queue, model::ServerQueue{});
}

TEST(Hpa, AnAbsurdRateStopsAtTheReplicaCap) {
  EXPECT_EQ(Replicas(1e12), kMaxReplicas);
  EXPECT_EQ(ReplicasAt(1e300, 3, 3), kMaxReplicas);
  const model::Plan plan = SolveHpa(OneTask(), {{{"only", 1e12}}}, {});
  EXPECT_TRUE(std::isfinite(plan.paths[0].predicted_latency_ms));
}

}  // namespace
}  // namespace pipescale::optimizer
