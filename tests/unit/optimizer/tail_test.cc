#include "optimizer/tail.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "model/limits.h"
#include "optimizer/graph.h"
#include "support/batch_sim.h"

namespace pipescale::optimizer {
namespace {

TEST(ErlangQuantile, OneArrivalIsExponential) {
  for (double p : {0.5, 0.9, 0.99, 0.999}) {
    EXPECT_NEAR(ErlangQuantileMs(1, 4, p), -1000 * std::log(1 - p) / 4, 1e-6);
  }
  EXPECT_EQ(ErlangQuantileMs(0, 4, 0.99), 0);
}

TEST(ErlangQuantile, MatchesTheCdfForManyArrivals) {
  // P(Erlang(k, 1) <= x) = P(Poisson(x) >= k): the quantile found inverts it.
  for (int k : {2, 7, 31, 500}) {
    const double x = ErlangQuantileMs(k, 1000, 0.99);  // rate 1000/s: x in units of 1 ms = 1/rate
    double below = 0, term = std::exp(-x);
    for (int i = 0; i < k; ++i) {
      below += term;
      term *= x / (i + 1);
    }
    EXPECT_NEAR(1 - below, 0.99, 1e-6) << k;
  }
}

TEST(ErlangC, OneServerWaitsAtItsUtilisation) {
  for (double rho : {0.1, 0.5, 0.9}) EXPECT_NEAR(ErlangC(1, rho), rho, 1e-12);
  EXPECT_NEAR(ErlangC(2, 1), 1.0 / 3, 1e-12);  // textbook M/M/2 at a = 1
  EXPECT_EQ(ErlangC(3, 3), 1);
  EXPECT_LT(ErlangC(10000, 9000), 1e-3);  // no overflow with many servers
}

// d(b) of the FA2 example's tasks (deploy/examples/fa2-gpu.yaml), from the heaviest to the
// lightest.
struct Quadratic {
  double a, b, c;
  double operator()(int rows) const { return a * rows * rows + b * rows + c; }
};
const Quadratic kProfiles[] = {
    {1.082, 215.318, 324.6}, {0.76, 170.24, 209}, {0.14, 20.86, 49}, {0.084, 12.516, 29.4}};

struct Instance {
  TaskLoad load;
  Quadratic d;
};

// Loads a plan could pick: utilisation from 5% to 85% (past it no plan goes: the model's
// latency grows without bound there, and so does the simulated).
std::vector<Instance> Instances(bool router_forms) {
  std::mt19937_64 rng(7);
  std::vector<Instance> out;
  while (out.size() < 120) {
    const Quadratic d = kProfiles[rng() % 4];
    const int batch = 1 << (rng() % 4);
    const int replicas = 1 + static_cast<int>(rng() % 6);
    const double rho = std::uniform_real_distribution<double>(0.05, 0.85)(rng);
    const double rate = rho * replicas * 1000 * batch / d(batch);
    out.push_back({{.rate_rps = rate,
                    .replicas = replicas,
                    .batch = batch,
                    .exec_ms = d(batch),
                    .exec_one_ms = d(1),
                    .formation = router_forms ? BatchFormation::kRouter : BatchFormation::kServer},
                   d});
  }
  return out;
}

// How requests arrive in the simulation, and what the model is told of it. Bursty: each
// instance's rate redrawn every second with a coefficient of variation of 10-30% (per-second
// counts of index of dispersion 1 + rate cv^2: 2-3 at a real trace's 100/s), the model told that
// index or planning them as Poisson arrivals.
enum class Arrivals { kPoisson, kBurstyTold, kBurstyAsPoisson };

// The model's p99 against the simulated: the ratios, sorted.
std::vector<double> Ratios(bool router_forms, Arrivals arrivals = Arrivals::kPoisson) {
  std::mt19937_64 rng(17);
  std::vector<double> ratios;
  for (Instance i : Instances(router_forms)) {
    double cv = 0;
    if (arrivals != Arrivals::kPoisson) cv = std::uniform_real_distribution<double>(0.1, 0.3)(rng);
    if (arrivals == Arrivals::kBurstyTold)
      i.load.arrival_dispersion = 1 + i.load.rate_rps * cv * cv;
    const TailLatency tail = TaskTailLatency(i.load, 99);
    // The servers wait for a full batch however long it takes (the model assumes no server wait
    // it does not know); the router, its budget.
    const double wait = router_forms ? tail.wait_budget_ms : 1e12;
    const double simulated = testing::SimulatedQuantileMs({.rate_rps = i.load.rate_rps,
                                                           .rate_cv = cv,
                                                           .replicas = i.load.replicas,
                                                           .batch = i.load.batch,
                                                           .exec_ms = i.d,
                                                           .router_forms = router_forms,
                                                           .wait_ms = wait},
                                                          0.99);
    ratios.push_back(tail.TotalMs() / simulated);
  }
  std::sort(ratios.begin(), ratios.end());
  const size_t n = ratios.size();
  const char* names[] = {"Poisson", "bursty, told", "bursty, as Poisson"};
  std::printf(
      "%s arrivals, %s forms batches: model / simulated p99 over %zu loads: min %.2f, p10 %.2f, "
      "median %.2f, p90 %.2f, max %.2f\n",
      names[static_cast<int>(arrivals)], router_forms ? "the router" : "each server", n, ratios[0],
      ratios[n / 10], ratios[n / 2], ratios[9 * n / 10], ratios[n - 1]);
  return ratios;
}

// The property the planners rely on: a plan whose predicted p99 meets the SLO meets it. The model
// bounds the simulated p99 from above (in 9 instances of 10 at least; never below 0.8 of it, the
// power of two choices' rare collisions at low load), and does not buy that with a bound so
// loose it wastes replicas (the median within 1.6x).
TEST(TaskTailLatency, BoundsTheSimulatedP99WhenTheRouterFormsBatches) {
  const std::vector<double> r = Ratios(true);
  EXPECT_GE(r.front(), 0.8);
  EXPECT_GE(r[r.size() / 10], 1.0);
  EXPECT_LE(r[r.size() / 2], 1.6);
}

TEST(TaskTailLatency, BoundsTheSimulatedP99WhenTheServersFormBatches) {
  const std::vector<double> r = Ratios(false);
  EXPECT_GE(r.front(), 0.8);
  EXPECT_GE(r[r.size() / 10], 1.0);
  EXPECT_LE(r[r.size() / 2], 1.6);
}

TEST(TaskTailLatency, MoreReplicasNeverWaitLongerWhenTheRouterFormsBatches) {
  for (const Instance& i : Instances(true)) {
    TaskLoad load = i.load;
    double last = TaskTailLatency(load, 99).TotalMs();
    for (int more = 0; more < 5; ++more) {
      ++load.replicas;
      const double now = TaskTailLatency(load, 99).TotalMs();
      EXPECT_LE(now, last + 1e-9);
      last = now;
    }
  }
}

TEST(TaskTailLatency, AHigherPercentileNeverPredictsLess) {
  for (bool router : {true, false}) {
    for (const Instance& i : Instances(router)) {
      double last = 0;
      for (double p : {50.0, 90.0, 99.0, 99.9, 100.0}) {
        const double now = TaskTailLatency(i.load, p).TotalMs();
        EXPECT_GE(now, last - 1e-9);
        last = now;
      }
    }
  }
}

// What the router's dispersion buys: told how bursty the arrivals are, the model bounds the
// simulated p99 as it does for Poisson arrivals; planned as Poisson arrivals, it falls short.
TEST(TaskTailLatency, BoundsTheSimulatedP99OfBurstyArrivalsWhenToldTheirDispersion) {
  for (bool router : {true, false}) {
    const std::vector<double> told = Ratios(router, Arrivals::kBurstyTold);
    EXPECT_GE(told.front(), 0.8);
    EXPECT_GE(told[told.size() / 10], 1.0);
    EXPECT_LE(told[told.size() / 2], 1.6);
    const std::vector<double> poisson = Ratios(router, Arrivals::kBurstyAsPoisson);
    EXPECT_LT(poisson.front(), 0.8);
  }
}

TEST(TaskTailLatency, MoreDispersedArrivalsNeverWaitLess) {
  for (bool router : {true, false}) {
    for (Instance i : Instances(router)) {
      double last = TaskTailLatency(i.load, 99).TotalMs();
      for (double dispersion : {1.0, 1.5, 2.0, 4.0, 10.0, 50.0}) {
        i.load.arrival_dispersion = dispersion;
        const double now = TaskTailLatency(i.load, 99).TotalMs();
        EXPECT_GE(now, last - 1e-9);
        last = now;
      }
      i.load.arrival_dispersion = 0.5;  // below Poisson: planned as Poisson
      EXPECT_EQ(TaskTailLatency(i.load, 99).TotalMs(),
                TaskTailLatency({i.load.rate_rps, i.load.replicas, i.load.batch, i.load.exec_ms,
                                 i.load.exec_one_ms, i.load.formation},
                                99)
                    .TotalMs());
    }
  }
}

// What a Prometheus answer may say of a task's dispersion, as the planners take it.
TEST(TaskDispersion, IsPoissonWhereAbsentOrAbsurdAndCappedWhereHuge) {
  model::Workload w;
  w.task_dispersion = {{"lumpy", 2.5},
                       {"nan", std::numeric_limits<double>::quiet_NaN()},
                       {"inf", std::numeric_limits<double>::infinity()},
                       {"smooth", 0.4},
                       {"huge", 1e300}};
  EXPECT_EQ(TaskDispersion(w, "lumpy"), 2.5);
  EXPECT_EQ(TaskDispersion(w, "absent"), 1);
  EXPECT_EQ(TaskDispersion(w, "nan"), 1);
  EXPECT_EQ(TaskDispersion(w, "inf"), 1);
  EXPECT_EQ(TaskDispersion(w, "smooth"), 1);
  EXPECT_EQ(TaskDispersion(w, "huge"), limits::kMaxDispersion);
}

TEST(TaskTailLatency, SaturatedReplicasAreInfinitelyLate) {
  const TaskLoad load{.rate_rps = 100, .replicas = 2, .batch = 1, .exec_ms = 20, .exec_one_ms = 20};
  EXPECT_TRUE(std::isinf(TaskTailLatency(load, 99).TotalMs()));  // 2 x 50 rps, at 100%
  TaskLoad idle = load;
  idle.rate_rps = 0;
  EXPECT_EQ(TaskTailLatency(idle, 99).TotalMs(), 20);
}

}  // namespace
}  // namespace pipescale::optimizer
