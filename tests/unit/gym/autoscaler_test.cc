#include "gym/autoscaler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace pipescale::gym {
namespace {

const std::string kTask = "t";

// Feeds `seconds` samples of `task` alike, the last ending at `to_s`.
void Feed(Autoscaler& policy, int to_s, int seconds, const TaskSample& sample,
          const std::string& task = kTask) {
  for (int t = to_s - seconds + 1; t <= to_s; ++t) policy.Observe(t, task, sample);
}

TaskSample Busy(int ready, double share) { return {.ready = ready, .busy = ready * share}; }
TaskSample Rate(int ready, double rps) { return {.ready = ready, .arrivals_rps = rps}; }
TaskSample Held(int ready, double concurrency) {
  return {.ready = ready, .concurrency = concurrency};
}

// One task's Deployment in the tests' world: pods turn Ready `start_s` after they are asked
// for; a scale-down removes the newest first, as a ReplicaSet deletes not-Ready pods first.
class Pods {
 public:
  explicit Pods(int replicas, double start_s = 0) : start_s_(start_s) {
    ready_at_.assign(replicas, 0);
  }
  int Replicas() const { return static_cast<int>(ready_at_.size()); }
  int Ready(double now_s) const {
    return static_cast<int>(
        std::count_if(ready_at_.begin(), ready_at_.end(), [&](double at) { return at <= now_s; }));
  }
  void Set(int replicas, double now_s) {
    while (Replicas() < replicas) ready_at_.push_back(now_s + start_s_);
    while (Replicas() > replicas) ready_at_.pop_back();
  }

 private:
  double start_s_;
  std::vector<double> ready_at_;
};

// `units` of work per second as a task's pods see it: a pod serves one unit; each unit is 10
// requests per second, held as 2 requests.
TaskSample Work(double units, int ready) {
  return {.ready = ready,
          .busy = std::min(units, static_cast<double>(ready)),
          .concurrency = 2 * units,
          .arrivals_rps = 10 * units};
}

using WorldFn = std::function<TaskSample(int now_s, int ready)>;

struct Decision {
  int at_s = 0;
  int ready = 0;  // in the last sample before it
  int before = 0;
  int after = 0;
};

// Drives `policy` on one task over (from_s, to_s]: each second ends with a sample of `world`,
// and at every multiple of PeriodSeconds the policy decides and the Deployment takes the answer.
std::vector<Decision> Drive(Autoscaler& policy, Pods& pods, int from_s, int to_s,
                            const WorldFn& world) {
  const int period = static_cast<int>(policy.PeriodSeconds());
  std::vector<Decision> out;
  for (int t = from_s + 1; t <= to_s; ++t) {
    const int ready = pods.Ready(t);
    policy.Observe(t, kTask, world(t, ready));
    if (t % period != 0) continue;
    const int before = pods.Replicas();
    const int after = policy.Desired(t, kTask, before);
    pods.Set(after, t);
    out.push_back({t, ready, before, after});
  }
  return out;
}

std::vector<int> Answers(const std::vector<Decision>& decisions) {
  std::vector<int> out;
  for (const Decision& d : decisions) out.push_back(d.after);
  return out;
}

// ---- HPA

TEST(HpaTest, SyncsEvery15s) { EXPECT_EQ(MakeHpa({})->PeriodSeconds(), 15); }

TEST(HpaTest, HoldsWithinToleranceAndScalesUpPastIt) {
  // Against a 70% target: 73% reads 1.043 and 70% reads 1, both within 0.1; 78% reads 1.114.
  for (double share : {0.735, 0.70}) {
    auto hpa = MakeHpa({{kTask, {.utilization = 0.7}}});
    Feed(*hpa, 15, 15, Busy(10, share));
    EXPECT_EQ(hpa->Desired(15, kTask, 10), 10) << share;
  }
  auto hpa = MakeHpa({{kTask, {.utilization = 0.7}}});
  Feed(*hpa, 15, 15, Busy(10, 0.785));
  EXPECT_EQ(hpa->Desired(15, kTask, 10), 12);  // ceil(78 / 70 x 10)
}

TEST(HpaTest, HoldsWithinToleranceBelowTargetPastTheStabilizationWindow) {
  // 64% of a 70% target (0.914) keeps 10 pods for good; 55% (0.786) asks for 8, which the
  // window releases once 300 s have passed since the first sync recorded 10.
  auto run = [](double share) {
    auto hpa = MakeHpa({{kTask, {.utilization = 0.7}}});
    Pods pods(10);
    return Answers(Drive(*hpa, pods, 0, 450, [&](int, int ready) { return Busy(ready, share); }));
  };
  const std::vector<int> held = run(0.645);
  EXPECT_TRUE(std::all_of(held.begin(), held.end(), [](int r) { return r == 10; }));
  EXPECT_EQ(run(0.55).back(), 8);
}

TEST(HpaTest, ScaleUpIsLimitedToDoubleOrFourMorePodsPerSync) {
  // A 10% target: a saturated pod reads a ratio of 10 and asks for ten times its pods.
  auto hpa = MakeHpa({{kTask, {.utilization = 0.1, .max_replicas = 100}}});
  Pods pods(1);
  const auto decisions = Drive(*hpa, pods, 0, 120, [](int, int ready) { return Work(1e6, ready); });
  EXPECT_EQ(Answers(decisions), (std::vector<int>{5, 10, 20, 40, 80, 100, 100, 100}));
  for (const Decision& d : decisions) {
    EXPECT_LE(d.after, std::max(2 * d.before, d.before + 4)) << d.at_s;
  }
}

TEST(HpaTest, ScalesDownOnlyOnce300sPassedWithoutAHigherRecommendation) {
  // 4 pods at the 50% target until t = 105, then 10%: every sync from 120 on asks for 1 pod.
  // The last recommendation of 4 is the one at 105, so 4 pods stay until 405.
  auto hpa = MakeHpa({{kTask, {.utilization = 0.5}}});
  Pods pods(4);
  const auto decisions =
      Drive(*hpa, pods, 0, 600, [](int t, int ready) { return Work(t <= 105 ? 2 : 0.4, ready); });
  for (const Decision& d : decisions) {
    EXPECT_EQ(d.after, d.at_s < 405 ? 4 : 1) << d.at_s;
  }
}

TEST(HpaTest, FirstSyncRecordsTheCurrentReplicasAsARecommendation) {
  // Idle from the start: 6 pods stay 300 s from the first sync (at 15), then go to the minimum.
  auto hpa = MakeHpa({{kTask, {.utilization = 0.5, .min_replicas = 2}}});
  Pods pods(6);
  const auto decisions = Drive(*hpa, pods, 0, 330, [](int, int ready) { return Work(0, ready); });
  for (const Decision& d : decisions) {
    EXPECT_EQ(d.after, d.at_s < 315 ? 6 : 2) << d.at_s;
  }
}

TEST(HpaTest, CountsPodsNotYetReadyAtZeroOnScaleUp) {
  // 2 Ready pods at 86% of a 40% target (2.15) ask for ceil(4.3) = 5 on their own...
  auto alone = MakeHpa({{kTask, {.utilization = 0.4}}});
  Feed(*alone, 15, 15, Busy(2, 0.86));
  EXPECT_EQ(alone->Desired(15, kTask, 2), 5);
  // ...but with 2 more pods starting, counted at 0%, the ratio is 43 / 40, within tolerance.
  auto starting = MakeHpa({{kTask, {.utilization = 0.4}}});
  Feed(*starting, 15, 15, Busy(2, 0.86));
  EXPECT_EQ(starting->Desired(15, kTask, 4), 4);
  // Load beyond what all 4 carry still scales up: 3 Ready at 100% of 50% is 75 / 50 over 4.
  auto beyond = MakeHpa({{kTask, {.utilization = 0.5}}});
  Feed(*beyond, 15, 15, Busy(3, 1.0));
  EXPECT_EQ(beyond->Desired(15, kTask, 4), 6);
}

TEST(HpaTest, ReadsUtilizationInWholePercent) {
  // 60.05% of a 50% target is read as 60%: ceil(1.2 x 10) = 12, not ceil(12.01) = 13.
  auto hpa = MakeHpa({{kTask, {.utilization = 0.5}}});
  Feed(*hpa, 15, 15, Busy(10, 0.6005));
  EXPECT_EQ(hpa->Desired(15, kTask, 10), 12);
}

TEST(HpaTest, LeavesTheScaleAloneWithoutMetrics) {
  auto hpa = MakeHpa({{kTask, {}}});
  EXPECT_EQ(hpa->Desired(15, kTask, 3), 3);  // nothing observed
  Feed(*hpa, 30, 15, Busy(0, 0));
  EXPECT_EQ(hpa->Desired(30, kTask, 3), 3);  // no pod Ready
}

TEST(HpaTest, BringsReplicasOutsideTheBoundsBack) {
  auto hpa = MakeHpa({{kTask, {.min_replicas = 2, .max_replicas = 5}}});
  Feed(*hpa, 15, 15, Busy(9, 0.7));
  EXPECT_EQ(hpa->Desired(15, kTask, 9), 5);
  EXPECT_EQ(hpa->Desired(30, kTask, 1), 2);
  EXPECT_EQ(hpa->Desired(45, kTask, 0), 2);
}

TEST(HpaTest, TasksAreIndependent) {
  auto hpa = MakeHpa({{"a", {.utilization = 0.5}}, {"b", {.utilization = 0.5}}});
  Feed(*hpa, 15, 15, Busy(2, 1.0), "a");
  Feed(*hpa, 15, 15, Busy(2, 0.5), "b");
  EXPECT_EQ(hpa->Desired(15, "a", 2), 4);
  EXPECT_EQ(hpa->Desired(15, "b", 2), 2);
}

// ---- KEDA

TEST(KedaTest, TheHpaReadsTheScalerEverySync) { EXPECT_EQ(MakeKeda({})->PeriodSeconds(), 15); }

TEST(KedaTest, ScalesToCeilOfRateOverThreshold) {
  auto keda = MakeKeda({{kTask, {.rps = 10}}});
  Feed(*keda, 120, 120, Rate(3, 45));
  EXPECT_EQ(keda->Desired(120, kTask, 3), 5);  // 4.5 replicas' worth
}

TEST(KedaTest, HoldsWithinToleranceOfTheCurrentReplicas) {
  auto within = MakeKeda({{kTask, {.rps = 10}}});
  Feed(*within, 120, 120, Rate(3, 32));  // 32 / 30 = 1.067
  EXPECT_EQ(within->Desired(120, kTask, 3), 3);
  auto past = MakeKeda({{kTask, {.rps = 10}}});
  Feed(*past, 120, 120, Rate(3, 34));  // 34 / 30 = 1.133
  EXPECT_EQ(past->Desired(120, kTask, 3), 4);
}

TEST(KedaTest, ToleranceCountsTheDeploymentsPodsReadyOrNot) {
  // 42 rps against 4 pods (2 still starting) reads 42 / 40 = 1.05: no change. Against the 2
  // Ready ones it would read 2.1.
  auto keda = MakeKeda({{kTask, {.rps = 10}}});
  Feed(*keda, 120, 120, Rate(2, 42));
  EXPECT_EQ(keda->Desired(120, kTask, 4), 4);
}

TEST(KedaTest, RateIsTheMeanOverTheQueryRange) {
  // 60 s idle then 60 s at 40 rps: a [2m] range reads 20 (2 replicas), a [1m] one 40 (4).
  auto two_minutes = MakeKeda({{kTask, {.rps = 10}}});
  Feed(*two_minutes, 60, 60, Rate(1, 0));
  Feed(*two_minutes, 120, 60, Rate(1, 40));
  EXPECT_EQ(two_minutes->Desired(120, kTask, 1), 2);
  auto one_minute = MakeKeda({{kTask, {.rps = 10}}}, {.rate_window_s = 60});
  Feed(*one_minute, 60, 60, Rate(1, 0));
  Feed(*one_minute, 120, 60, Rate(1, 40));
  EXPECT_EQ(one_minute->Desired(120, kTask, 1), 4);
}

TEST(KedaTest, FollowsTheHpaBehaviour) {
  // 1000 rps for 90 s (100 replicas' worth) then 100 rps (10).
  auto keda = MakeKeda({{kTask, {.rps = 10}}});
  Pods pods(1);
  const auto decisions =
      Drive(*keda, pods, 0, 600, [](int t, int ready) { return Work(t <= 90 ? 100 : 10, ready); });
  std::vector<int> answers = Answers(decisions);
  // Scale-up: at most double or +4 per sync.
  EXPECT_EQ(std::vector<int>(answers.begin(), answers.begin() + 6),
            (std::vector<int>{5, 10, 20, 40, 80, 100}));
  for (const Decision& d : decisions) {
    // The recommendation at 90 asks for 100, so nothing lower before 390; at 390 the highest
    // left is 105's, from the rate over (0, 105]: ceil(871.43 / 10) = 88. The [2m] range is
    // all 100 rps from 210, and 300 s later so is every recommendation in the window.
    if (d.at_s >= 90 && d.at_s < 390) {
      EXPECT_EQ(d.after, 100) << d.at_s;
    }
    if (d.at_s == 390) {
      EXPECT_EQ(d.after, 88);
    }
    if (d.at_s >= 510) {
      EXPECT_EQ(d.after, 10) << d.at_s;
    }
  }
}

TEST(KedaTest, CachedMetricsAreRefreshedOncePerPollingInterval) {
  for (bool cached : {false, true}) {
    auto keda =
        MakeKeda({{kTask, {.rps = 10}}}, {.rate_window_s = 15, .use_cached_metrics = cached});
    Feed(*keda, 15, 15, Rate(2, 20));
    EXPECT_EQ(keda->Desired(15, kTask, 2), 2);
    Feed(*keda, 30, 15, Rate(2, 60));
    // Cached, the value polled at 15 still reads 20 rps at 30; polled again at 45.
    EXPECT_EQ(keda->Desired(30, kTask, 2), cached ? 2 : 6) << cached;
    Feed(*keda, 45, 15, Rate(2, 60));
    EXPECT_EQ(keda->Desired(45, kTask, 2), 6) << cached;
  }
}

// ---- KPA

TEST(KpaTest, TicksEvery2s) { EXPECT_EQ(MakeKpa({})->PeriodSeconds(), 2); }

TEST(KpaTest, StableAnswerIsCeilOfMeanConcurrencyOverTargetTimesUtilization) {
  auto kpa = MakeKpa({{kTask, {.concurrency = 10}}});  // 7 requests per pod
  EXPECT_EQ(kpa->Desired(0, kTask, 3), 3);             // created with no pod Ready, no data yet
  Feed(*kpa, 30, 30, Held(3, 10));
  Feed(*kpa, 60, 30, Held(3, 30));
  // The 60 s mean is 20: ceil(20 / 7) = 3. The last 6 s alone (30) would ask for 5, short of
  // the panic threshold (5 / 3 < 2).
  EXPECT_EQ(kpa->Desired(60, kTask, 3), 3);
  // Another 30 s at 30: the mean is 30, 5 pods.
  Feed(*kpa, 90, 30, Held(3, 30));
  EXPECT_EQ(kpa->Desired(90, kTask, 3), 5);
}

TEST(KpaTest, PanicsOnATripledLoadAndDoesNotScaleDownUntilAStableWindowPasses) {
  // 7 requests held (1 pod at 7 per pod) until 100, 21 until 120, then 7 again.
  auto kpa = MakeKpa({{kTask, {.concurrency = 10}}});
  Pods pods(1);
  auto held = [](int t) { return t > 100 && t <= 120 ? 21.0 : 7.0; };
  const auto decisions =
      Drive(*kpa, pods, 0, 240, [&](int t, int ready) { return Held(ready, held(t)); });
  int last = 0;
  for (const Decision& d : decisions) {
    if (d.at_s <= 100) {
      EXPECT_EQ(d.after, 1) << d.at_s;
    }
    // At 102 the 6 s window (2 of its seconds at 21) asks for 2 pods, twice the 1 Ready: panic.
    // At 104 it asks for 3 while the 60 s window asks for 2.
    if (d.at_s == 102) {
      EXPECT_EQ(d.after, 2);
    }
    if (d.at_s == 104) {
      EXPECT_EQ(d.after, 3);
    }
    // In panic (last over the threshold at 102) nothing goes down, though the load is back to
    // 7 from 120; at 164 the panic is over and the 60 s mean (10.7) asks for 2.
    if (d.at_s > 102 && d.at_s <= 162) {
      EXPECT_GE(d.after, last) << d.at_s;
    }
    if (d.at_s == 164) {
      EXPECT_EQ(d.after, 2);
    }
    last = d.after;
  }
}

TEST(KpaTest, ScaleDownAtMostHalvesTheReadyPodsPerTick) {
  auto kpa = MakeKpa({{kTask, {.concurrency = 10}}});
  EXPECT_EQ(kpa->Desired(0, kTask, 16), 16);  // created before any pod is Ready: no panic
  Pods pods(16);
  const auto decisions = Drive(*kpa, pods, 0, 12, [](int, int ready) { return Held(ready, 0); });
  EXPECT_EQ(Answers(decisions), (std::vector<int>{8, 4, 2, 1, 1, 1}));
}

TEST(KpaTest, StartsInPanicWhenItFirstSeesSeveralReadyPods) {
  // Created at its first tick (2) with 8 pods Ready and no load: it holds them until the
  // first tick more than 60 s later, then halves.
  auto kpa = MakeKpa({{kTask, {.concurrency = 10}}});
  Pods pods(8);
  const auto decisions = Drive(*kpa, pods, 0, 64, [](int, int ready) { return Held(ready, 0); });
  for (const Decision& d : decisions) {
    EXPECT_EQ(d.after, d.at_s < 64 ? 8 : 4) << d.at_s;
  }
}

TEST(KpaTest, KeepsAnswersWithinTheBounds) {
  auto kpa = MakeKpa({{kTask, {.concurrency = 1, .min_replicas = 3, .max_replicas = 5}}});
  EXPECT_EQ(kpa->Desired(0, kTask, 3), 3);
  Feed(*kpa, 2, 2, Held(3, 1000));
  EXPECT_EQ(kpa->Desired(2, kTask, 3), 5);
  // Idle past the panic: 3 Ready may halve to 1, 5 Ready to 2; the minimum keeps 3.
  Feed(*kpa, 70, 68, Held(3, 0));
  EXPECT_EQ(kpa->Desired(70, kTask, 3), 3);
  Feed(*kpa, 72, 2, Held(5, 0));
  EXPECT_EQ(kpa->Desired(72, kTask, 5), 3);
}

// ---- All

TEST(BoundsTest, NoneScalesToZero) {
  // A minimum of 0 is taken as 1: idle for 400 s, every port ends at one pod.
  const std::map<std::string, TaskTarget> targets = {{kTask, {.min_replicas = 0}}};
  std::vector<std::unique_ptr<Autoscaler>> policies;
  policies.push_back(MakeHpa(targets));
  policies.push_back(MakeKeda(targets));
  policies.push_back(MakeKpa(targets));
  for (const auto& policy : policies) {
    Pods pods(1);
    const auto decisions =
        Drive(*policy, pods, 0, 400, [](int, int ready) { return Work(0, ready); });
    for (const Decision& d : decisions) {
      ASSERT_EQ(d.after, 1) << d.at_s;
    }
  }
}

TEST(BoundsTest, ATaskWithoutATargetGetsTheDefaults) {
  auto hpa = MakeHpa({});
  EXPECT_EQ(hpa->Desired(15, "other", 150), 100);
}

// ---- Properties over generated load

struct Baseline {
  const char* name;
  std::function<std::unique_ptr<Autoscaler>(std::map<std::string, TaskTarget>)> make;
  // Whether `replicas` fit `units` of work as the policy sizes them: HPA and KEDA within their
  // tolerance of the pods needed at the target (or the one pod ceil adds), KPA exactly.
  std::function<bool(double units, int replicas, const TaskTarget&)> fits;
};

bool WithinTolerance(double needed, int replicas) {
  return replicas >= needed / 1.1 - 0.05 && replicas <= needed / 0.9 + 1;
}

std::vector<Baseline> Baselines() {
  return {
      {"hpa", [](auto targets) { return MakeHpa(std::move(targets)); },
       [](double units, int r, const TaskTarget& t) {
         return WithinTolerance(units / t.utilization, r);
       }},
      {"keda", [](auto targets) { return MakeKeda(std::move(targets)); },
       [](double units, int r, const TaskTarget& t) {
         return WithinTolerance(10 * units / t.rps, r);
       }},
      {"kpa", [](auto targets) { return MakeKpa(std::move(targets)); },
       [](double units, int r, const TaskTarget& t) {
         return r == static_cast<int>(std::ceil(2 * units / (t.concurrency * t.utilization)));
       }},
  };
}

// Piecewise-constant load, a level in [0, 30] units held 10..200 s at a time, then `tail`
// from `steady_from_s` on.
std::function<double(int)> Load(std::mt19937& rng, int steady_from_s, double tail) {
  std::vector<std::pair<int, double>> steps;  // level from a second on
  std::uniform_int_distribution<int> hold(10, 200);
  std::uniform_real_distribution<double> level(0, 30);
  for (int t = 0; t < steady_from_s; t += hold(rng)) steps.emplace_back(t, level(rng));
  steps.emplace_back(steady_from_s, tail);
  return [steps](int t) {
    double units = 0;
    for (const auto& [from, value] : steps) {
      if (t > from) units = value;
    }
    return units;
  };
}

TEST(BaselinePropertyTest, StayInBoundsAndSettleOnConstantLoad) {
  const std::map<std::string, TaskTarget> targets = {
      {"a",
       {.utilization = 0.6, .rps = 8, .concurrency = 3, .min_replicas = 2, .max_replicas = 12}},
      {"b", {.utilization = 0.8, .rps = 12, .concurrency = 2, .max_replicas = 40}}};
  constexpr int kSteadyFrom = 1800;
  constexpr int kEnd = 3600;
  constexpr int kSettledFrom = 3000;
  for (const Baseline& baseline : Baselines()) {
    int at_max = 0;    // decisions that answered a task's maximum
    int starting = 0;  // decisions made while pods were still starting
    for (unsigned seed = 1; seed <= 6; ++seed) {
      SCOPED_TRACE(std::string(baseline.name) + " seed " + std::to_string(seed));
      std::mt19937 rng(seed);
      std::uniform_real_distribution<double> tail(0.5, 20);
      auto policy = baseline.make(targets);
      const int period = static_cast<int>(policy->PeriodSeconds());
      for (const auto& [task, target] : targets) {
        const auto load = Load(rng, kSteadyFrom, tail(rng));
        Pods pods(target.min_replicas, 30);  // a model takes 30 s to load
        std::vector<int> settled;
        for (int t = 1; t <= kEnd; ++t) {
          const int ready = pods.Ready(t);
          policy->Observe(t, task, Work(load(t), ready));
          if (t % period != 0) continue;
          const int before = pods.Replicas();
          const int after = policy->Desired(t, task, before);
          ASSERT_GE(after, target.min_replicas) << task << " at " << t;
          ASSERT_LE(after, target.max_replicas) << task << " at " << t;
          if (std::string(baseline.name) != "kpa") {
            ASSERT_LE(after, std::max(2 * before, before + 4)) << task << " at " << t;
          } else {
            ASSERT_GE(after,
                      std::min(target.max_replicas, std::max(target.min_replicas, ready / 2)))
                << task << " at " << t;
          }
          at_max += after == target.max_replicas;
          starting += ready < before;
          pods.Set(after, t);
          if (t >= kSettledFrom) settled.push_back(after);
        }
        ASSERT_FALSE(settled.empty());
        EXPECT_TRUE(std::all_of(settled.begin(), settled.end(), [&](int r) {
          return r == settled.front();
        })) << task;
        const int r = settled.front();
        if (r < target.max_replicas && r > target.min_replicas) {
          EXPECT_TRUE(baseline.fits(load(kEnd), r, target))
              << task << ": " << r << " replicas for " << load(kEnd) << " units";
        }
      }
    }
    // The generated loads reach the bounds and catch pods starting, or the bounds go untested.
    EXPECT_GT(at_max, 0) << baseline.name;
    EXPECT_GT(starting, 0) << baseline.name;
  }
}

}  // namespace
}  // namespace pipescale::gym
