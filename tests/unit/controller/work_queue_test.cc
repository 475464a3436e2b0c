#include "controller/work_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "controller/controller.h"
#include "integration/harness/wait.h"

namespace pipescale::controller {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;

TEST(WorkQueue, DedupesQueuedKeys) {
  WorkQueue q;
  q.Add("a");
  q.Add("a");
  q.Add("b");
  EXPECT_EQ(q.Depth(), 2u);
  EXPECT_EQ(q.Get(), "a");
  EXPECT_EQ(q.Get(), "b");
}

TEST(WorkQueue, AKeyInFlightIsRequeuedOnlyWhenDone) {
  WorkQueue q;
  q.Add("a");
  ASSERT_EQ(q.Get(), "a");
  q.Add("a");                // changed while being reconciled
  EXPECT_EQ(q.Depth(), 0u);  // not handed to a second worker
  q.Done("a");
  EXPECT_EQ(q.Depth(), 1u);
  EXPECT_EQ(q.Get(), "a");
}

TEST(WorkQueue, DelayedKeysComeLaterAndEarlierDeadlinesWin) {
  WorkQueue q;
  q.AddAfter("slow", 10min);
  q.AddAfter("slow", 30ms);  // the earlier deadline wins
  EXPECT_EQ(q.Depth(), 0u);
  EXPECT_EQ(q.Waiting(), 1u);
  const auto start = WorkQueue::Clock::now();
  EXPECT_EQ(q.Get(), "slow");
  EXPECT_GE(WorkQueue::Clock::now() - start, 25ms);
  q.Done("slow");
  q.AddAfter("x", 30ms);
  q.Add("x");  // an explicit add does not wait
  EXPECT_EQ(q.Get(), "x");
  q.Done("x");
  EXPECT_EQ(q.Waiting(), 1u);  // nor does it cancel the look asked for later
  EXPECT_EQ(q.Get(), "x");
  EXPECT_GE(WorkQueue::Clock::now() - start, 55ms);
}

// The property: keys added with random delays (some added again, earlier or later) come out in
// the order of their earliest deadlines, each once.
TEST(WorkQueue, DelayedKeysComeInTheOrderOfTheirDeadlines) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> ms(1, 80);
  WorkQueue q;
  std::map<std::string, WorkQueue::Clock::time_point> due;
  for (int i = 0; i < 120; ++i) {
    const std::string key = "k" + std::to_string(rng() % 80);
    const auto delay = std::chrono::milliseconds(ms(rng));
    const auto at = WorkQueue::Clock::now() + delay;
    q.AddAfter(key, delay);
    auto [it, inserted] = due.emplace(key, at);
    if (!inserted) it->second = std::min(it->second, at);
  }
  EXPECT_EQ(q.Waiting(), due.size());
  std::vector<std::pair<WorkQueue::Clock::time_point, std::string>> expected;
  for (const auto& [key, at] : due) expected.emplace_back(at, key);
  std::sort(expected.begin(), expected.end());
  for (const auto& [at, key] : expected) {
    auto got = q.Get();
    ASSERT_TRUE(got.has_value());
    // Two deadlines within the clock's reading of one AddAfter may come either way.
    if (*got != key) {
      EXPECT_LT(due.at(*got) - at, 1ms) << *got << " before " << key;
    }
    EXPECT_GE(WorkQueue::Clock::now(), due.at(*got) - 1ms);  // the queue read its clock first
    q.Done(*got);
  }
  EXPECT_EQ(q.Waiting(), 0u);
  EXPECT_EQ(q.Depth(), 0u);
}

// A worker asleep until a late deadline wakes for an earlier one added meanwhile.
TEST(WorkQueue, AnEarlierDeadlineWakesASleepingWorker) {
  WorkQueue q;
  q.AddAfter("late", 10min);
  std::thread worker([&] { EXPECT_EQ(q.Get(), "soon"); });
  // Asleep until the late deadline first: else the earlier one would only be read, not wake it.
  EXPECT_TRUE(Eventually([&] { return q.Sleeping() == 1; }, 10s, 1ms));
  const auto start = WorkQueue::Clock::now();
  q.AddAfter("soon", 10ms);
  worker.join();
  EXPECT_LT(WorkQueue::Clock::now() - start, 5s);  // not the 10 minutes it went to sleep for
  EXPECT_EQ(q.Waiting(), 1u);
  EXPECT_EQ(q.Sleeping(), 0u);
}

TEST(WorkQueue, ShutDownReleasesWaitingWorkers) {
  WorkQueue q;
  std::thread worker([&] { EXPECT_EQ(q.Get(), std::nullopt); });
  // Asleep in Get, where only the shutdown can wake it (a Get after it returns at once).
  EXPECT_TRUE(Eventually([&] { return q.Sleeping() == 1; }, 10s, 1ms));
  q.ShutDown();
  worker.join();
  EXPECT_EQ(q.Sleeping(), 0u);
}

TEST(OnError, ConflictsRetrySoonInvalidWaitsTheRestBackOff) {
  EXPECT_EQ(OnError({ErrorKind::kConflict, ""}, 1).delay, 100ms);
  EXPECT_FALSE(OnError({ErrorKind::kInvalid, ""}, 1).delay.has_value());
  EXPECT_EQ(OnError({ErrorKind::kTransient, ""}, 1).delay, 1000ms);
  EXPECT_EQ(OnError({ErrorKind::kTransient, ""}, 4).delay, 8000ms);
  EXPECT_EQ(OnError({ErrorKind::kExpired, ""}, 30).delay, 300000ms);  // capped at 5 minutes
}

// Properties of the spread of periodic reconciles: never later than asked; a key that comes
// back by its period alone keeps it exactly; and 10,000 keys reconciled at the same moment
// come back spread evenly over the period (each tenth of it within 10% +- 1.5 points).
TEST(Spread, NeverLaterKeepsThePeriodAndSpreadsKeysEvenly) {
  const std::chrono::milliseconds period = 10s;
  std::array<int, 10> tenths{};
  for (int i = 0; i < 10000; ++i) {
    const std::string key = "team-" + std::to_string(i % 7) + "/pipeline-" + std::to_string(i);
    const std::chrono::milliseconds start{123456789};
    const auto first = Spread(key, period, start);
    ASSERT_GT(first.count(), 0);
    ASSERT_LE(first, period);
    ++tenths[static_cast<size_t>(10 * (first.count() - 1) / period.count())];
    // Reconciled at its moment (and a few ms late, as a busy worker is), it keeps the period.
    EXPECT_EQ(Spread(key, period, start + first), period);
    EXPECT_EQ(Spread(key, period, start + first + 7ms), period - 7ms);
    // A reconcile an event caused in between moves nothing: the next moment is the same.
    EXPECT_EQ(start + first + 3s + Spread(key, period, start + first + 3s), start + first + period);
  }
  for (int n : tenths) EXPECT_NEAR(n, 1000, 150);
  EXPECT_EQ(Spread("x", 0ms, 5ms), 0ms);  // no period: no spread
}

TEST(Controller, RetriesConflictsAndRequeuesAfterSuccess) {
  prometheus::Registry registry;
  std::atomic<int> calls{0};
  Controller c(
      "test",
      [&](const std::string&) -> Result<std::optional<std::chrono::milliseconds>> {
        const int n = ++calls;
        if (n <= 2) return Error{ErrorKind::kConflict, "409"};
        if (n == 3) return std::optional<std::chrono::milliseconds>{20ms};  // requeue after
        return std::optional<std::chrono::milliseconds>{};
      },
      registry, 2);
  c.Start();
  c.Enqueue("ns/p");
  EXPECT_TRUE(Eventually([&] { return calls >= 4; }, 10s, 1ms));
  c.Stop();
  EXPECT_EQ(calls, 4);  // the fourth asked for no requeue
  const std::string metrics = [&] {
    std::string out;
    for (const auto& f : registry.Collect()) out += f.name + " ";
    return out;
  }();
  EXPECT_NE(metrics.find("controller_runtime_reconcile_total"), std::string::npos);
  EXPECT_NE(metrics.find("workqueue_depth"), std::string::npos);
}

// An invalid object is left to its next change: once its reconcile is done, nothing is queued
// or waiting for it, at any delay. A transient error beside it shows what a retry looks like.
TEST(Controller, InvalidObjectsAreNotRetried) {
  prometheus::Registry registry;
  std::atomic<int> invalid_calls{0}, transient_calls{0};
  Controller c(
      "test",
      [&](const std::string& key) -> Controller::Outcome {
        if (key == "ns/invalid") {
          ++invalid_calls;
          return Error{ErrorKind::kInvalid, "bad"};
        }
        ++transient_calls;
        return Error{ErrorKind::kTransient, "apiserver unreachable"};
      },
      registry, 1);
  c.Start();
  c.Enqueue("ns/invalid");
  c.Enqueue("ns/transient");
  // The one worker asleep again after both: done with each, its retry (if any) scheduled.
  EXPECT_TRUE(Eventually(
      [&] { return invalid_calls == 1 && transient_calls == 1 && c.queue().Sleeping() == 1; }, 10s,
      1ms));
  EXPECT_EQ(c.queue().Depth(), 0u);
  EXPECT_EQ(c.queue().Waiting(), 1u);  // the transient error's retry, 1 s on; none for the other
  c.Stop();
  EXPECT_EQ(invalid_calls, 1);
}

}  // namespace
}  // namespace pipescale::controller
