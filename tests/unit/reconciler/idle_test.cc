#include "reconciler/idle.h"

#include <gtest/gtest.h>

#include <random>

#include "support/parsed_pipeline.h"
#include "support/pipelines.h"

namespace pipescale::reconciler {
namespace {

// The traffic pipeline (cars: detect -> classify; faces: detect -> recognize) with scale to zero.
model::Pipeline Traffic(double after_idle, model::WakeScope wake = model::WakeScope::kPath) {
  model::Pipeline p = testing::TrafficPipeline();
  p.spec.scale_to_zero = model::ScaleToZero{.after_idle_seconds = after_idle, .wake = wake};
  return p;
}

model::MetricsSnapshot Rates(double cars, double faces) {
  return {.path_rates_rps = {{"cars", cars}, {"faces", faces}}};
}

TEST(Idle, APathSleepsAfterItsIdleTimeAndItsOwnTasksWithIt) {
  const model::Pipeline p = Traffic(60);
  Sleep s = JudgeSleep(p, Rates(0, 5), {}, 1000);
  EXPECT_EQ(s.memory.quiet_since, (std::map<std::string, double>{{"cars", 1000}}));
  EXPECT_TRUE(s.memory.sleeping_paths.empty());
  EXPECT_EQ(s.look_after_seconds, 60);  // when cars would fall asleep
  s = JudgeSleep(p, Rates(0, 5), {.quiet_since = s.memory.quiet_since}, 1059);
  EXPECT_TRUE(s.memory.sleeping_paths.empty());
  EXPECT_EQ(s.look_after_seconds, 1);
  s = JudgeSleep(p, Rates(0, 5), {.quiet_since = s.memory.quiet_since}, 1060);
  EXPECT_EQ(s.memory.sleeping_paths, std::set<std::string>{"cars"});
  // detect also serves faces: only classify sleeps.
  EXPECT_EQ(s.sleeping_tasks, std::set<std::string>{"classify"});
  EXPECT_FALSE(s.idle);
  EXPECT_EQ(s.look_after_seconds, kSleepingLookSeconds);
  s = JudgeSleep(p, Rates(0, 0), {.quiet_since = s.memory.quiet_since}, 1070);
  EXPECT_EQ(s.sleeping_tasks, std::set<std::string>{"classify"});
  s = JudgeSleep(p, Rates(0, 0), {.quiet_since = s.memory.quiet_since}, 1130);
  EXPECT_TRUE(s.idle);
  EXPECT_EQ(s.sleeping_tasks.size(), 3u);
}

// A new pipeline's quiet paths have slept since before it was created; a path with requests, held
// or answered, is awake, and one that falls quiet later waits its idle time.
TEST(Idle, ANewPipelinesQuietPathsSleepAtOnce) {
  const model::Pipeline p = Traffic(60);
  Sleep s = JudgeSleep(p, Rates(0, 0), {}, 1000, /*new_pipeline=*/true);
  EXPECT_TRUE(s.idle);
  model::MetricsSnapshot m = Rates(0, 0);
  m.door_waiting = {{"faces", 2}};
  s = JudgeSleep(p, m, {}, 1000, true);
  EXPECT_EQ(s.memory.sleeping_paths, std::set<std::string>{"cars"});
  EXPECT_EQ(s.sleeping_tasks, std::set<std::string>{"classify"});
  s = JudgeSleep(p, Rates(0, 0), s.memory, 1010);
  EXPECT_EQ(s.sleeping_tasks, std::set<std::string>{"classify"});
  EXPECT_EQ(s.look_after_seconds, kSleepingLookSeconds);
  s = JudgeSleep(p, Rates(0, 0), s.memory, 1070);
  EXPECT_TRUE(s.idle);
}

TEST(Idle, ARequestHeldAtTheDoorWakesItsPathAndOneNamingNoneWakesEvery) {
  const model::Pipeline p = Traffic(60);
  const std::map<std::string, double> long_quiet = {{"cars", 0}, {"faces", 0}};
  model::MetricsSnapshot m = Rates(0, 0);
  EXPECT_TRUE(JudgeSleep(p, m, {.quiet_since = long_quiet}, 1000).idle);
  m.door_waiting = {{"faces", 2}};
  Sleep s = JudgeSleep(p, m, {.quiet_since = long_quiet}, 1000);
  EXPECT_EQ(s.memory.sleeping_paths, std::set<std::string>{"cars"});
  EXPECT_EQ(s.sleeping_tasks, std::set<std::string>{"classify"});
  EXPECT_FALSE(s.memory.quiet_since.contains("faces"));  // its quiet time starts over
  m.door_waiting = {{"", 1}};
  EXPECT_TRUE(JudgeSleep(p, m, {.quiet_since = long_quiet}, 1000).sleeping_tasks.empty());
}

TEST(Idle, WakePipelineSleepsAndWakesEveryTaskTogether) {
  const model::Pipeline p = Traffic(60, model::WakeScope::kPipeline);
  const std::map<std::string, double> long_quiet = {{"cars", 0}, {"faces", 0}};
  EXPECT_TRUE(JudgeSleep(p, Rates(0, 0), {.quiet_since = long_quiet}, 1000).idle);
  const Sleep s = JudgeSleep(p, Rates(0, 1), {.quiet_since = long_quiet}, 1000);
  EXPECT_TRUE(s.sleeping_tasks.empty());
  EXPECT_TRUE(s.memory.sleeping_paths.empty());
}

// A window kept awake ahead of a forecast return holds the path until it ends, then counts as a
// forecast missed; one with more left than any forecast gives (the wake's lead and twice the
// tolerance: a status edited by hand) keeps nothing awake and is no miss.
TEST(Idle, AnAwakeWindowLastsNoLongerThanAForecastCanMakeIt) {
  const model::Pipeline p = Traffic(60);
  const std::map<std::string, double> long_quiet = {{"cars", 0}, {"faces", 0}};
  const double longest = p.WakeSeconds(0) + 2 * p.spec.scale_to_zero->wake_ahead.ToleranceSeconds();
  auto judge = [&](double until) {
    SleepMemory before{.quiet_since = long_quiet};
    before.awake_ahead["cars"] = {.until = until, .rate_rps = 5};
    return JudgeSleep(p, Rates(0, 0), before, 1000);
  };
  Sleep s = judge(1000 + longest);
  EXPECT_TRUE(s.memory.awake_ahead.contains("cars"));
  EXPECT_FALSE(s.memory.sleeping_paths.contains("cars"));
  s = judge(1000);
  EXPECT_TRUE(s.memory.sleeping_paths.contains("cars"));
  EXPECT_TRUE(s.forecast_missed.contains("cars"));
  for (const double until : {1000 + longest + 1, 1000 + 10 * 86400.0, 1e300}) {
    s = judge(until);
    EXPECT_TRUE(s.idle) << until;
    EXPECT_TRUE(s.memory.awake_ahead.empty()) << until;
    EXPECT_FALSE(s.forecast_missed.contains("cars")) << until;
  }
}

// A quiet time from a clock ahead of this one is read as now: never as quiet for longer.
TEST(Idle, AQuietTimeInTheFutureCountsFromNow) {
  const model::Pipeline p = Traffic(60);
  const Sleep s =
      JudgeSleep(p, Rates(0, 0), {.quiet_since = {{"cars", 5000}, {"faces", 5000}}}, 1000);
  EXPECT_FALSE(s.idle);
  EXPECT_EQ(s.memory.quiet_since.at("cars"), 1000);
}

// Against a direct rule on random histories: a path sleeps exactly when every look over the
// last afterIdleSeconds (since the first quiet look of its current quiet run) saw it quiet, and a
// task sleeps exactly when every path through it sleeps (wake: Path), or all tasks do together
// (wake: Pipeline).
TEST(Idle, MatchesTheDirectRuleOnRandomHistories) {
  std::mt19937 rng(47);
  for (int trial = 0; trial < 200; ++trial) {
    const auto wake = trial % 2 ? model::WakeScope::kPipeline : model::WakeScope::kPath;
    const model::Pipeline p = Traffic(std::uniform_int_distribution<int>(1, 40)(rng), wake);
    const double after = p.spec.scale_to_zero->after_idle_seconds;
    std::map<std::string, double> kept;
    std::map<std::string, std::vector<std::pair<double, bool>>> looks;  // path: (time, quiet)
    double now = 1000;
    for (int step = 0; step < 60; ++step) {
      now += std::uniform_int_distribution<int>(1, 10)(rng);
      model::MetricsSnapshot m = Rates(rng() % 4 == 0 ? 1 : 0, rng() % 5 == 0 ? 2 : 0);
      if (rng() % 10 == 0) m.door_waiting[rng() % 2 ? "cars" : "faces"] = 1;
      const Sleep s = JudgeSleep(p, m, {.quiet_since = kept}, now);
      kept = s.memory.quiet_since;
      std::set<std::string> asleep;
      for (const char* path : {"cars", "faces"}) {
        const bool quiet = m.path_rates_rps.at(path) <= 0 && !m.door_waiting.contains(path);
        looks[path].push_back({now, quiet});
        // The direct rule: the first look of the current quiet run.
        double since = -1;
        for (auto it = looks[path].rbegin(); it != looks[path].rend() && it->second; ++it) {
          since = it->first;
        }
        if (since >= 0 && now - since >= after) asleep.insert(path);
      }
      if (wake == model::WakeScope::kPipeline && asleep.size() < 2) asleep.clear();
      ASSERT_EQ(s.memory.sleeping_paths, asleep) << trial << " at " << now;
      std::set<std::string> tasks;
      if (asleep.size() == 2) tasks = {"detect", "classify", "recognize"};
      if (asleep == std::set<std::string>{"cars"}) tasks = {"classify"};
      if (asleep == std::set<std::string>{"faces"}) tasks = {"recognize"};
      ASSERT_EQ(s.sleeping_tasks, tasks) << trial;
      ASSERT_EQ(s.idle, tasks.size() == 3);
    }
  }
}

// The door watch queues a reconcile exactly when the reconcile would wake a path: on random
// sleeping paths and held requests, WakesNow agrees with JudgeSleep's own waking.
TEST(Idle, TheDoorWatchQueuesAReconcileExactlyWhenTheHeldRequestsWakeASleepingPath) {
  std::mt19937 rng(49);
  const std::vector<std::string> names = {"", "cars", "faces"};
  for (int trial = 0; trial < 500; ++trial) {
    const bool whole = trial % 3 == 0;
    model::Pipeline p = Traffic(60, whole ? model::WakeScope::kPipeline : model::WakeScope::kPath);
    p.spec.router = model::RouterSpec{};
    SleepMemory before = {.quiet_since = {{"cars", 0}, {"faces", 0}}};
    const bool both = rng() % 2;  // wake: Pipeline sleeps all paths or none
    for (const char* path : {"cars", "faces"}) {
      if (whole ? both : rng() % 2) before.sleeping_paths.insert(path);
    }
    // What the status keeps: quiet paths that do not sleep yet are not asleep for the watch.
    model::PipelineStatus status;
    status.memory.emplace().sleeping_paths.assign(before.sleeping_paths.begin(),
                                                  before.sleeping_paths.end());
    model::MetricsSnapshot m = Rates(0, 0);
    for (const std::string& path : names) {
      if (rng() % 3 == 0) m.door_waiting[path] = static_cast<double>(rng() % 3);
    }
    const Sleep after = JudgeSleep(p, m, before, 1000);
    const bool woke = std::ranges::any_of(before.sleeping_paths, [&](const std::string& path) {
      return !after.memory.sleeping_paths.contains(path);
    });
    ASSERT_EQ(WakesNow(p, status, m.door_waiting), woke) << trial;
    ASSERT_EQ(DoorWatched(p, status), !before.sleeping_paths.empty()) << trial;
  }
}

// Only a pipeline with a router (the door) and scale to zero, a path of which sleeps, is read.
TEST(Idle, TheDoorWatchReadsOnlyPipelinesWithASleepingPathBehindARouter) {
  model::Pipeline p = Traffic(60);
  model::PipelineStatus status;
  status.memory.emplace().sleeping_paths = {"cars"};
  p.spec.router.reset();
  EXPECT_FALSE(DoorWatched(p, status));
  p.spec.router = model::RouterSpec{};
  EXPECT_TRUE(DoorWatched(p, status));
  EXPECT_TRUE(WakesNow(p, status, {{"cars", 1}}));
  EXPECT_FALSE(WakesNow(p, status, {{"faces", 1}}));  // awake: its pods restart, no wake
  p.spec.scale_to_zero.reset();
  EXPECT_FALSE(DoorWatched(p, status));
  EXPECT_FALSE(WakesNow(p, status, {{"cars", 1}}));
  p = Traffic(60);
  p.spec.router = model::RouterSpec{};
  EXPECT_FALSE(DoorWatched(p, {}));
  status.memory->sleeping_paths.clear();
  EXPECT_FALSE(DoorWatched(p, status));
}

// Held requests are arrivals over the time they have been seen held (plus the second it takes to
// see them), else over the rate's 10 s window.
TEST(Idle, HeldRequestsArePlannedAsArrivalsOverTheTimeTheyWaited) {
  const model::Pipeline p = Traffic(60);
  model::MetricsSnapshot m = Rates(0.1, 3);
  EXPECT_EQ(PlannedRates(p, m, {}, 100), m.path_rates_rps);
  m.door_waiting = {{"cars", 50}};
  EXPECT_DOUBLE_EQ(PlannedRates(p, m, {}, 100).at("cars"), 0.1 + 5);
  EXPECT_DOUBLE_EQ(PlannedRates(p, m, {}, 100).at("faces"), 3);
  EXPECT_DOUBLE_EQ(PlannedRates(p, m, {.held_since = {{"cars", 100}}}, 100).at("cars"), 0.1 + 50);
  EXPECT_DOUBLE_EQ(PlannedRates(p, m, {.held_since = {{"cars", 100}}}, 104).at("cars"), 0.1 + 10);
  // Naming no path: spread by the paths' weights (1 and 1 here).
  m.door_waiting = {{"", 20}};
  EXPECT_DOUBLE_EQ(PlannedRates(p, m, {}, 100).at("cars"), 0.1 + 1);
  EXPECT_DOUBLE_EQ(PlannedRates(p, m, {}, 100).at("faces"), 3 + 1);
  // The first look that sees them starts their time, kept while any is held.
  Sleep s = JudgeSleep(p, m, {}, 100);
  EXPECT_EQ(s.memory.held_since, (std::map<std::string, double>{{"", 100}}));
  s = JudgeSleep(p, m, s.memory, 103);
  EXPECT_EQ(s.memory.held_since.at(""), 100);
  m.door_waiting.clear();
  EXPECT_TRUE(JudgeSleep(p, m, s.memory, 104).memory.held_since.empty());
}

}  // namespace
}  // namespace pipescale::reconciler
