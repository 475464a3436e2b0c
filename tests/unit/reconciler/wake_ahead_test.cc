#include "reconciler/wake_ahead.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "reconciler/idle.h"
#include "support/parsed_pipeline.h"
#include "support/pipelines.h"

namespace pipescale::reconciler {
namespace {

constexpr double kDay = 86400;
constexpr double kEight = 8 * 3600;  // 08:00 of day 0
const model::WakeAhead kDaily{.period_seconds = kDay, .confirmations = 2};

TEST(WakeAhead, WakesItsLeadAndToleranceAheadOfLoadThatReturnedOnEachOfTheLastDays) {
  const std::vector<model::LoadReturn> returns = {{.at = kEight + kDay, .rate_rps = 3},
                                                  {.at = kEight + 2 * kDay + 60, .rate_rps = 5}};
  const double tolerance = kDaily.ToleranceSeconds();
  EXPECT_EQ(tolerance, 600);
  const double lead = 32;
  // Day 3: the earliest moment both days' returns lie within the tolerance of now + lead.
  const double first = kEight + 3 * kDay + 60 - tolerance - lead;
  EXPECT_FALSE(ForecastReturn(returns, kDaily, lead, first - 1));
  const auto w = ForecastReturn(returns, kDaily, lead, first);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->until, kEight + 3 * kDay + 60 + tolerance);  // the latest return, plus tolerance
  EXPECT_EQ(w->rate_rps, 5);
  EXPECT_TRUE(ForecastReturn(returns, kDaily, lead, kEight + 3 * kDay));
  // One day is not two; and confirmations 0 turns it off.
  EXPECT_FALSE(ForecastReturn({returns[1]}, kDaily, lead, first));
  EXPECT_FALSE(ForecastReturn(returns, {.period_seconds = kDay, .confirmations = 0}, lead, first));
  // Seen on day 1 and day 2, the forecast for day 3 is not one for day 4 (day 3 did not come).
  EXPECT_FALSE(ForecastReturn(returns, kDaily, lead, first + kDay));
}

// Properties on random histories: a forecast needs a return near this time in each of the last
// `confirmations` periods (remove them from any one period and it is gone), a forecast with k
// confirmations is one with fewer, and its window holds the expected return.
TEST(WakeAhead, AForecastStandsOnEveryPeriodOfItsConfirmationsOnRandomHistories) {
  std::mt19937 rng(48);
  const model::WakeAhead rule{.period_seconds = 1200, .confirmations = 3};
  const double tolerance = rule.ToleranceSeconds();
  int forecasts = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<model::LoadReturn> returns;
    for (int i = std::uniform_int_distribution<int>(0, 12)(rng); i > 0; --i) {
      returns.push_back({.at = std::uniform_real_distribution<double>(0, 4800)(rng),
                         .rate_rps = std::uniform_real_distribution<double>(0, 9)(rng)});
    }
    const double now = std::uniform_real_distribution<double>(3600, 4800)(rng);
    const double lead = 30;
    const auto w = ForecastReturn(returns, rule, lead, now);
    for (int k = 1; k <= rule.confirmations; ++k) {
      std::vector<model::LoadReturn> without;
      for (const model::LoadReturn& r : returns) {
        if (std::abs(r.at + k * rule.period_seconds - (now + lead)) > tolerance)
          without.push_back(r);
      }
      if (without.size() < returns.size()) {
        EXPECT_FALSE(ForecastReturn(without, rule, lead, now)) << trial << " k " << k;
      } else {
        EXPECT_FALSE(w) << trial << " k " << k;  // no return then: no forecast
      }
    }
    if (!w) continue;
    ++forecasts;
    EXPECT_TRUE(ForecastReturn(returns, {.period_seconds = 1200, .confirmations = 2}, lead, now));
    EXPECT_GE(w->until, now + lead);
    EXPECT_LE(w->until, now + lead + 2 * tolerance);
  }
  EXPECT_GT(forecasts, 10);  // the properties were exercised
}

TEST(WakeAhead, ReturnsAreForgottenOnceTooOldToConfirmAndKeptBounded) {
  std::vector<model::LoadReturn> returns;
  NoteReturn(returns, kDaily, 1000);
  NoteReturn(returns, kDaily, 1000 + 2 * kDay);
  EXPECT_EQ(returns.size(), 2u);
  NoteReturn(returns, kDaily, 1000 + 2 * kDay + 601);  // the first is past two days and 600 s
  ASSERT_EQ(returns.size(), 2u);
  EXPECT_EQ(returns[0].at, 1000 + 2 * kDay);
  for (int i = 0; i < 100; ++i) NoteReturn(returns, kDaily, 200000 + i);
  EXPECT_EQ(returns.size(), kMaxReturns);
  EXPECT_EQ(returns.back().at, 200099);
  // A return's rate rises over its first minute only.
  NoteReturnRate(returns, 7, 200099 + kReturnRateSeconds);
  EXPECT_EQ(returns.back().rate_rps, 7);
  EXPECT_EQ(returns.front().rate_rps, 0);
}

// The rule through JudgeSleep, look by look over five periods of 1200 s: load returns at 300 s
// into periods 0 and 1; the path wakes ahead of it in period 2 (which comes), again in period 3
// (which does not: the path sleeps at the window's end), and not in period 4, whose chain the
// missed day broke.
TEST(WakeAhead, ThroughTheSleepRuleAWrongForecastIsNeverKeptNorRepeated) {
  model::Pipeline p = testing::TrafficPipeline();
  p.spec.scale_to_zero = model::ScaleToZero{
      .after_idle_seconds = 60, .wake_ahead = {.period_seconds = 1200, .confirmations = 2}};
  const double lead = p.WakeSeconds(0);
  const double tolerance = p.spec.scale_to_zero->wake_ahead.ToleranceSeconds();
  const auto busy = [](double t) {
    const double in = std::fmod(t, 1200);
    const int period = static_cast<int>(t / 1200);
    return period != 3 && in >= 300 && in < 400;
  };
  SleepMemory memory{.quiet_since = {{"cars", 0}, {"faces", 0}}};
  std::map<int, double> woke_at;    // period: when cars woke ahead
  std::map<int, double> missed_at;  // period: when its forecast ended with no request
  for (double t = 1; t < 6000; t += 1) {
    const double cars = busy(t) ? 2 : 0;
    const Sleep s = JudgeSleep(p, {.path_rates_rps = {{"cars", cars}, {"faces", 0}}}, memory, t);
    const int period = static_cast<int>(t / 1200);
    if (s.woke_ahead.contains("cars")) woke_at[period] = t;
    if (s.forecast_missed.contains("cars")) missed_at[period] = t;
    // Awake (not asleep) from the wake ahead to the return.
    if (woke_at.contains(period) && t >= woke_at[period] && std::fmod(t, 1200) < 300 &&
        !missed_at.contains(period)) {
      EXPECT_FALSE(s.memory.sleeping_paths.contains("cars")) << t;
      EXPECT_FALSE(s.sleeping_tasks.contains("classify")) << t;
    }
    memory = s.memory;
  }
  EXPECT_EQ(woke_at, (std::map<int, double>{{2, 2 * 1200 + 300 - tolerance - lead},
                                            {3, 3 * 1200 + 300 - tolerance - lead}}));
  EXPECT_EQ(missed_at, (std::map<int, double>{{3, 3 * 1200 + 300 + tolerance}}));
}

}  // namespace
}  // namespace pipescale::reconciler
