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

int Replicas(double rps, int running, std::optional<int> max_replicas = std::nullopt) {
  PlannerInput input;
  if (running > 0) input.running[PoolKey("m", "gpu")] = running;
  const model::Plan plan =
      SolveHpa(OneTask(max_replicas), {{{"only", rps}}}, input, {.max_batch = 1});
  EXPECT_EQ(plan.tasks[0].batch_size, 1);
  return plan.tasks[0].replicas;
}

TEST(Hpa, FromScratchItSizesEachTaskToTheTarget) {
  for (double rps : {0.5, 7.0, 7.1, 20.0, 69.9, 70.0, 70.1}) {
    EXPECT_EQ(Replicas(rps, 0), std::max(1, static_cast<int>(std::ceil(rps / 7 - 1e-9)))) << rps;
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
  // 3 replicas at 21 rps are at the target; +-10% of it changes nothing, more does.
  EXPECT_EQ(Replicas(21 * 1.09, 3), 3);
  EXPECT_EQ(Replicas(21 * 0.91, 3), 3);
  EXPECT_EQ(Replicas(21 * 1.2, 3), 4);  // ceil(3 x 1.2)
  EXPECT_EQ(Replicas(21 * 0.5, 3), 2);  // ceil(3 x 0.5); the reconciler holds scale-downs
}

// Property: from any running count, more demand never asks for fewer replicas, and the answer
// stays within the class's limit.
TEST(Hpa, MoreDemandNeverAsksForFewerReplicas) {
  for (int running = 0; running <= 12; ++running) {
    int last = 0;
    for (double rps = 0; rps <= 200; rps += 0.7) {
      const int now = Replicas(rps, running, 15);
      EXPECT_GE(now, last) << running << " running, " << rps << " rps";
      EXPECT_LE(now, 15);
      EXPECT_GE(now, 1);
      last = now;
    }
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
  EXPECT_EQ(Replicas(1e12, 0), kMaxReplicas);
  const model::Plan plan = SolveHpa(OneTask(), {{{"only", 1e12}}}, {});
  EXPECT_TRUE(std::isfinite(plan.paths[0].predicted_latency_ms));
}

}  // namespace
}  // namespace pipescale::optimizer
