// The work budgets of FA2, its baselines, `exact` and MArk's provisioning: huge or hostile
// problems end quickly with a valid plan or a clear Infeasible reason, and the shortcuts that
// keep ordinary problems fast give exactly the answers of the plain algorithms.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <string>

#include "optimizer/exact.h"
#include "optimizer/fa2.h"
#include "optimizer/mark.h"
#include "optimizer/problem.h"
#include "optimizer/registry.h"

namespace pipescale::optimizer {
namespace {

// A chain of `tasks` tasks, each with one variant profiled on every class, and one path.
model::Pipeline Chain(int tasks, int classes, int max_batch, double slo_ms, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0, 1);
  model::Pipeline p;
  p.name = "chain";
  for (int c = 0; c < classes; ++c) {
    // Equal and zero prices too: ties are where a front is easy to get wrong.
    const double price = c % 3 == 0 ? 0.0 : 0.1 * (1 + c % 2);
    p.spec.hardware_classes.push_back({.name = "c" + std::to_string(c), .cost_per_hour = price});
  }
  model::Path path{.name = "p", .tasks = {}, .slo_ms = slo_ms};
  for (int t = 0; t < tasks; ++t) {
    model::Variant v{.name = "v", .max_batch = max_batch};
    for (int c = 0; c < classes; ++c) {
      model::LatencyProfile latency;
      if (unit(rng) < 0.5) {
        latency.quadratic = {.a = 0.01 * unit(rng), .b = 1 + 5 * unit(rng), .c = 10 * unit(rng)};
      } else {
        // A table whose latency is not monotone in the batch, as measured ones are not.
        latency.kind = model::LatencyProfile::Kind::kTable;
        for (int b = 1; b <= max_batch; b += 1 + static_cast<int>(3 * unit(rng))) {
          latency.points.push_back({b, 5 + b * (1 + unit(rng))});
        }
      }
      v.profiles.push_back({.hardware_class = "c" + std::to_string(c), .latency = latency});
    }
    model::Task task{.name = "t" + std::to_string(t), .next = {}, .variants = {v}};
    if (t + 1 < tasks) task.next.push_back({.task = "t" + std::to_string(t + 1)});
    p.spec.tasks.push_back(task);
    path.tasks.push_back(task.name);
  }
  p.spec.paths.push_back(path);
  return p;
}

model::Workload Rate(double rps) { return {.path_rates_rps = {{"p", rps}}}; }

// The front by its definition: in latency order, every choice no earlier choice dominates.
std::vector<Choice> PlainFront(std::vector<Choice> choices) {
  std::sort(choices.begin(), choices.end(), [](const Choice& x, const Choice& y) {
    if (x.LatencyMs() != y.LatencyMs()) return x.LatencyMs() < y.LatencyMs();
    return x.Cost() < y.Cost();
  });
  std::vector<Choice> front;
  for (const Choice& c : choices) {
    const bool dominated = std::any_of(front.begin(), front.end(), [&](const Choice& f) {
      return f.replicas <= c.replicas && f.cost_micro <= c.cost_micro && f.batch <= c.batch;
    });
    if (!dominated) front.push_back(c);
  }
  return front;
}

bool SameChoices(const std::vector<Choice>& x, const std::vector<Choice>& y) {
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i].hardware_class != y[i].hardware_class || x[i].batch != y[i].batch ||
        x[i].replicas != y[i].replicas || x[i].cost_micro != y[i].cost_micro) {
      return false;
    }
  }
  return true;
}

TEST(ProblemLimits, ParetoFrontIsTheDefinitionsFront) {
  std::mt19937_64 rng(20240110);
  for (int round = 0; round < 200; ++round) {
    const model::Pipeline p = Chain(2, 1 + round % 5, 1 + round % 97, 1000, rng);
    const Problem problem = Compile(p, Rate(std::pow(10.0, round % 7 - 1)));
    for (const Dnn& dnn : problem.dnns) {
      ASSERT_TRUE(SameChoices(dnn.front, PlainFront(dnn.choices))) << "round " << round;
    }
  }
}

TEST(ProblemLimits, AHugeRateIsInfeasibleNotAHandfulOfReplicas) {
  std::mt19937_64 rng(1);
  const model::Pipeline p = Chain(3, 2, 32, 1000, rng);
  for (double rps : {1e9, 1e300}) {
    const Problem problem = Compile(p, Rate(rps));
    for (const Dnn& dnn : problem.dnns) {
      for (const Choice& c : dnn.choices) EXPECT_EQ(c.replicas, kMaxReplicas + 1);
    }
    for (const char* name : {"fa2", "ds2", "inferline", "grandslam", "exact"}) {
      const model::Plan plan = FindOptimizer(name)->solve(p, Rate(rps), {});
      EXPECT_EQ(plan.report.status, model::SolveStatus::kInfeasible) << name;
      ASSERT_FALSE(plan.report.reasons.empty()) << name;
      EXPECT_NE(plan.report.reasons.back().find("need more than 10000 replicas"), std::string::npos)
          << plan.report.reasons.back();
      for (const auto& t : plan.tasks) EXPECT_EQ(t.replicas, kMaxReplicas) << name;
    }
  }
  // A rate near zero: batches would fill forever; the queueing delay stays a number.
  const Problem slow = Compile(p, Rate(1e-300));
  for (const Dnn& dnn : slow.dnns) {
    for (const Choice& c : dnn.choices) EXPECT_LE(c.queue_ms, kMaxQueueMs);
  }
  EXPECT_TRUE(std::isfinite(
      FindOptimizer("fa2")->solve(p, Rate(1e-300), {}).paths[0].predicted_latency_ms));
}

TEST(ProblemLimits, TooManyChoicesAreRefusedAtOnce) {
  std::mt19937_64 rng(2);
  const model::Pipeline p = Chain(64, 2, 4096, 3.6e6, rng);  // 64 x 2 x 4096 choices
  const auto start = std::chrono::steady_clock::now();
  const Problem problem = Compile(p, Rate(100));
  EXPECT_EQ(problem.too_large.rfind("too large: ", 0), 0u) << problem.too_large;
  EXPECT_NE(problem.too_large.find(" (hardware class, batch size) choices, more than 262144; "
                                   "lower batchSize.max or profile fewer hardware classes"),
            std::string::npos)
      << problem.too_large;
  for (const char* name : {"fa2", "ds2", "inferline", "grandslam", "exact"}) {
    const model::Plan plan = FindOptimizer(name)->solve(p, Rate(100), {});
    EXPECT_EQ(plan.report.status, model::SolveStatus::kInfeasible) << name;
    EXPECT_EQ(plan.report.reasons, std::vector<std::string>{problem.too_large}) << name;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ProblemLimits, Fa2CountsInCoarserSlotsWhenTheTableWouldOutgrowItsBudget) {
  std::mt19937_64 rng(3);
  // An hour of SLO over 64 tasks: 64 x 3.6e6 one-millisecond states.
  const model::Pipeline p = Chain(64, 1, 8, 3.6e6, rng);
  const Problem problem = Compile(p, Rate(50));
  Fa2Trace trace;
  const auto start = std::chrono::steady_clock::now();
  const Solution s = SolveFa2(problem, {}, &trace);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_GT(trace.slot_ms, 1);
  EXPECT_NE(s.status, model::SolveStatus::kInfeasible);
  EXPECT_TRUE(MeetsSlos(problem, s.assignment));
  // An SLO the table holds in 1 ms slots keeps them.
  Fa2Trace small;
  SolveFa2(Compile(Chain(4, 1, 8, 500, rng), Rate(50)), {}, &small);
  EXPECT_EQ(small.slot_ms, 1);
}

TEST(ProblemLimits, ExactStopsAtItsWorkBudget) {
  std::mt19937_64 rng(4);
  const model::Pipeline p = Chain(16, 4, 256, 5000, rng);
  const Problem problem = Compile(p, Rate(500));
  const auto start = std::chrono::steady_clock::now();
  const Solution s = SolveExact(problem, {.max_work = 100});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(s.status, model::SolveStatus::kTimeLimit);
}

// Algorithm 1 one instance at a time, as Provision was before it took repeated picks at once.
std::vector<int> PlainProvision(const std::vector<double>& forecast,
                                const std::vector<mark::InstanceClass>& classes,
                                const std::vector<int>& running, int lead) {
  const int steps = static_cast<int>(forecast.size());
  std::vector<int> kept(classes.size(), 0), launched(classes.size(), 0);
  if (lead >= steps) return kept;
  while (true) {
    double capacity = 0;
    for (size_t i = 0; i < classes.size(); ++i) {
      capacity += (kept[i] + launched[i]) * classes[i].capacity_rps;
    }
    auto unmet = [&](int t) { return forecast[t] - capacity; };
    int first = lead;
    while (first < steps && unmet(first) <= 1e-9) ++first;
    if (first == steps) break;
    int end = first;
    while (end + 1 < steps && unmet(end + 1) > 1e-9) ++end;
    double best_cost = std::numeric_limits<double>::infinity();
    int best = -1;
    bool best_running = false;
    for (bool from_running : {true, false}) {
      for (size_t i = 0; i < classes.size(); ++i) {
        if (from_running && kept[i] >= running[i]) continue;
        if (kept[i] + launched[i] >= classes[i].max_instances) continue;
        double absorbed = 0;
        for (int t = first; t <= end; ++t) absorbed += std::min(classes[i].capacity_rps, unmet(t));
        if (absorbed <= 0) continue;
        const double overhead = from_running ? 0 : classes[i].launch_overhead;
        const double cost = (overhead + (end - first + 1) * classes[i].price_per_step) / absorbed;
        if (cost < best_cost * (1 - 1e-12)) {
          best_cost = cost;
          best = static_cast<int>(i);
          best_running = from_running;
        }
      }
    }
    if (best < 0) break;
    (best_running ? kept : launched)[best] += 1;
  }
  std::vector<int> out(classes.size());
  for (size_t i = 0; i < classes.size(); ++i) out[i] = kept[i] + launched[i];
  return out;
}

TEST(MarkLimits, ProvisionTakesRepeatedPicksAtOnceWithTheSameResult) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> unit(0, 1);
  for (int round = 0; round < 300; ++round) {
    std::vector<mark::InstanceClass> classes;
    std::vector<int> running;
    const int n = 1 + round % 4;
    for (int i = 0; i < n; ++i) {
      classes.push_back(
          {.name = "c" + std::to_string(i),
           .capacity_rps = 0.5 + 200 * unit(rng),
           .price_per_step = unit(rng),
           .launch_overhead = 3 * unit(rng),
           .max_instances = round % 2 ? 10000 : 1 + static_cast<int>(500 * unit(rng))});
      running.push_back(static_cast<int>(50 * unit(rng)));
    }
    std::vector<double> forecast;
    const double level = std::pow(10.0, 1 + round % 5);
    for (int t = 0; t < 1 + round % 30; ++t) forecast.push_back(level * (0.5 + unit(rng)));
    const int lead = round % 3;
    ASSERT_EQ(mark::Provision(forecast, classes, running, lead),
              PlainProvision(forecast, classes, running, lead))
        << "round " << round;
  }
}

TEST(MarkLimits, ProvisionStopsAtItsBudget) {
  // A billion requests per second over classes a million times apart in capacity.
  const std::vector<mark::InstanceClass> classes = {
      {.name = "big", .capacity_rps = 1e6, .price_per_step = 1e6, .max_instances = 10},
      {.name = "tiny", .capacity_rps = 1, .price_per_step = 1, .max_instances = 1 << 20}};
  const std::vector<double> forecast(1441, 1e9);
  bool exhausted = false;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int> counts = mark::Provision(forecast, classes, {0, 0}, 0, &exhausted);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_LE(counts[1], 1 << 20);
}

}  // namespace
}  // namespace pipescale::optimizer
