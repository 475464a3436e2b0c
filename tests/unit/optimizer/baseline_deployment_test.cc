#include "optimizer/baseline_deployment.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "optimizer/graph.h"
#include "support/instance_generator.h"

namespace pipescale::optimizer {
namespace {

using testing::GenerateSuite;
using testing::Instance;

// The tightest share of a task, found the long way: every path's split, by its tasks' fastest
// d(1), written out as the fraction of the path's sum.
double ShareOf(const model::Pipeline& p, int task) {
  const auto fastest = [&](const model::Task& t) {
    double best = std::numeric_limits<double>::infinity();
    for (const auto& prof : t.MostAccurateVariant().profiles) {
      best = std::min(best, BatchMs(p.spec, prof.latency, 1));
    }
    return best;
  };
  double share = std::numeric_limits<double>::infinity();
  for (const model::Path& path : p.spec.paths) {
    double sum = 0;
    bool through = false;
    for (const std::string& t : path.tasks) {
      sum += fastest(p.spec.tasks[p.TaskIndex(t)]);
      through = through || p.TaskIndex(t) == task;
    }
    if (through) share = std::min(share, path.slo_ms * fastest(p.spec.tasks[task]) / sum);
  }
  return share;
}

// A replica's throughput and whether it fits, counted down from the largest batch.
struct Brute {
  int batch = 1;
  bool fits = false;
  double rps = 0;
};
Brute Largest(const model::Pipeline& p, const model::Profile& prof, int cap, double share,
              double overhead) {
  for (int b = cap; b >= 1; --b) {
    const double ms = BatchMs(p.spec, prof.latency, b) + overhead;
    if (2 * ms <= share * (1 + 1e-12)) return {b, true, b * 1000 / ms};
  }
  return {1, false, 1000 / (BatchMs(p.spec, prof.latency, 1) + overhead)};
}

// Against an independent search over every class and batch, on generated pipelines of one and
// two classes: the batch is the largest that fits, the class the cheapest per request among
// those that fit (the fastest when none does), the floor the fewest replicas for spec.minRate.
TEST(BaselineDeployment, MatchesAnExhaustiveSearchOnGeneratedPipelines) {
  for (const Instance& inst : GenerateSuite(60, 7)) {
    model::Pipeline p = inst.pipeline;
    const BaselineKnobs knobs{.target = 0.6, .call_overhead_ms = 2};
    const std::vector<BaselineTask> got = DeployBaseline(p, inst.workload, knobs);
    const std::vector<double> floor_rps = TaskRatesRps(p, inst.workload);
    ASSERT_EQ(got.size(), p.spec.tasks.size());
    for (size_t t = 0; t < got.size(); ++t) {
      SCOPED_TRACE(inst.label + " task " + p.spec.tasks[t].name);
      const model::Variant& v = p.spec.tasks[t].MostAccurateVariant();
      const double share = ShareOf(p, static_cast<int>(t));
      if (std::isinf(share)) {
        EXPECT_EQ(got[t].share_ms, share);  // on no path: no SLO holds its batch back
      } else {
        EXPECT_NEAR(got[t].share_ms, share, 1e-9 * share);
      }
      double best_price = std::numeric_limits<double>::infinity();
      Brute chosen;
      for (const model::Profile& prof : v.profiles) {
        const Brute b = Largest(p, prof, v.max_batch, share, knobs.call_overhead_ms);
        const double price =
            p.spec.hardware_classes[p.HardwareClassIndex(prof.hardware_class)].cost_per_hour /
            b.rps;
        if (b.fits && price < best_price) {
          best_price = price;
          chosen = b;
        }
      }
      if (std::isfinite(best_price)) {
        const auto& hw = p.spec.hardware_classes[got[t].hw_class];
        EXPECT_NEAR(hw.cost_per_hour / got[t].replica_rps, best_price, 1e-9 * best_price);
        EXPECT_EQ(got[t].batch, chosen.batch);
        EXPECT_LE(2 * got[t].batch_ms, share * (1 + 1e-12));
      }
      const double per_replica = knobs.target * got[t].replica_rps;
      EXPECT_GE(got[t].min_replicas * per_replica, floor_rps[t] * (1 - 1e-12));
      if (got[t].min_replicas > 1) {
        EXPECT_LT((got[t].min_replicas - 1) * per_replica, floor_rps[t]);
      }
      EXPECT_GE(got[t].queue_timeout_ms, got[t].batch_ms);
    }
  }
}

// Properties: a looser SLO never shrinks a task's batch on a class, and more load to be ready
// for never lowers a task's floor.
TEST(BaselineDeployment, LooserSlosNeverShrinkBatchesAndMoreFloorNeverFewerReplicas) {
  for (const Instance& inst : GenerateSuite(30, 11)) {
    SCOPED_TRACE(inst.label);
    model::Pipeline p = inst.pipeline;
    std::vector<BaselineTask> last = DeployBaseline(p, {}, {});
    for (int step = 0; step < 6; ++step) {
      for (model::Path& path : p.spec.paths) path.slo_ms *= 1.5;
      const std::vector<BaselineTask> now = DeployBaseline(p, {}, {});
      for (size_t t = 0; t < now.size(); ++t) {
        if (now[t].hw_class == last[t].hw_class) {
          EXPECT_GE(now[t].batch, last[t].batch);
        }
      }
      last = now;
    }
    last = DeployBaseline(p, {}, {});
    model::Workload more = inst.workload;
    for (int step = 0; step < 8; ++step) {
      for (auto& [path, rps] : more.path_rates_rps) rps = rps * 1.7 + 0.3;
      const std::vector<BaselineTask> now = DeployBaseline(p, more, {});
      for (size_t t = 0; t < now.size(); ++t) EXPECT_GE(now[t].min_replicas, last[t].min_replicas);
      last = now;
    }
  }
}

// The knobs a user turns: a class asked for is used where the variant runs there, whatever it
// costs; a max batch is every task's (within its variant's), whatever the SLO.
TEST(BaselineDeployment, TheKnobsAUserTurnsAreObeyed) {
  for (const Instance& inst : GenerateSuite(20, 3)) {
    const model::Pipeline& p = inst.pipeline;
    for (const model::HardwareClass& hw : p.spec.hardware_classes) {
      const std::vector<BaselineTask> got =
          DeployBaseline(p, {}, {.max_batch = 2, .hardware_class = hw.name});
      for (size_t t = 0; t < got.size(); ++t) {
        const bool runs_there = p.spec.tasks[t].MostAccurateVariant().FindProfile(hw.name);
        if (runs_there) {
          EXPECT_EQ(p.spec.hardware_classes[got[t].hw_class].name, hw.name);
        }
        EXPECT_EQ(got[t].batch, std::min(2, p.spec.tasks[t].variants[got[t].variant].max_batch));
        EXPECT_EQ(got[t].min_replicas, 1);  // no floor asked for
      }
    }
  }
}

}  // namespace
}  // namespace pipescale::optimizer
