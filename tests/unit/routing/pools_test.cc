// Kairos's queue and MArk's bouncer as the router runs them: one query in flight per replica,
// the queue's cap, replicas coming and going, and what each policy starts where.
#include "routing/pools.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace pipescale::routing {
namespace {

// Two classes: a fast one (1 ms per row) and one that is quick on small queries only (0.4 ms per
// row squared), as a CPU next to a GPU; C = 10 / 40 at the largest query of 10.
KairosQueue::Options TwoClasses(bool fcfs = false) {
  return {.latency_ms = {[](int rows) { return 1.0 * rows; },
                         [](int rows) { return 0.4 * rows * rows; }},
          .coefficient = {1, 0.25},
          .qos_ms = 40,
          .fcfs = fcfs};
}

TEST(KairosQueue, OneQueryInFlightPerReplicaAndTheQueueIsCapped) {
  KairosQueue q(TwoClasses());
  const std::vector<PoolReplica> replicas = {{7, 0}, {9, 1}};
  q.SetReplicas(replicas);
  EXPECT_EQ(q.capacity(), 4u);
  for (std::uint64_t i = 0; i < 4; ++i) EXPECT_TRUE(q.Arrive(i, 1, 0));
  EXPECT_FALSE(q.Arrive(4, 1, 0)) << "a fifth query over 2 replicas is past Kairos's cap";
  EXPECT_EQ(q.Match(0).size(), 2u);
  EXPECT_TRUE(q.Match(1).empty()) << "both replicas are busy until they complete";
  EXPECT_EQ(q.waiting(), 2u);
  q.Complete(9);
  const auto next = q.Match(5);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].replica, 9);
  EXPECT_TRUE(q.Arrive(5, 1, 5)) << "room again";
}

// The matcher's cost puts the big query on the fast class and the small one on the slow class,
// where first come first served puts whichever came first on the first idle replica.
TEST(KairosQueue, TheMatcherPutsBigQueriesOnTheFastClass) {
  for (const bool fcfs : {false, true}) {
    KairosQueue q(TwoClasses(fcfs));
    const std::vector<PoolReplica> replicas = {{0, 0}, {1, 1}};
    q.SetReplicas(replicas);
    q.Arrive(100, 2, 0);  // small, first
    q.Arrive(200, 9, 0);  // 32.4 ms on the slow class: within 40 but costlier
    std::map<std::uint64_t, int> where;
    for (const auto& s : q.Match(0)) where[s.query] = s.replica;
    ASSERT_EQ(where.size(), 2u);
    EXPECT_EQ(where[200], fcfs ? 1 : 0);
    EXPECT_EQ(where[100], fcfs ? 0 : 1);
  }
}

TEST(KairosQueue, AReplicaThatStaysKeepsItsQueryAndOneThatGoesIsForgotten) {
  KairosQueue q(TwoClasses());
  const std::vector<PoolReplica> one = {{1, 0}};
  q.SetReplicas(one);
  q.Arrive(1, 1, 0);
  ASSERT_EQ(q.Match(0).size(), 1u);
  const std::vector<PoolReplica> two = {{1, 0}, {2, 0}};
  q.SetReplicas(two);
  q.Arrive(2, 1, 0);
  q.Arrive(3, 1, 0);
  const auto starts = q.Match(0);
  ASSERT_EQ(starts.size(), 1u) << "replica 1 is still busy";
  EXPECT_EQ(starts[0].replica, 2);
  const std::vector<PoolReplica> gone = {{2, 0}};
  q.SetReplicas(gone);
  q.Complete(1);  // ignored: no longer a replica
  EXPECT_TRUE(q.Match(1).empty());
  q.Leave(3);
  EXPECT_EQ(q.waiting(), 0u);
}

// Over random arrivals, completions and other routers' calls coming and going: no replica ever
// holds two queries, none starts on a replica another router reports busy, no query starts twice
// or after it left, and first come first served is work-conserving (a query waits only while
// every replica is busy, here or elsewhere) and keeps arrival order.
TEST(KairosQueue, InvariantsOverRandomEvents) {
  std::mt19937 rng(11);
  for (const bool fcfs : {false, true}) {
    KairosQueue q(TwoClasses(fcfs));
    std::vector<PoolReplica> replicas;
    for (int j = 0; j < 5; ++j) replicas.push_back({j, j % 2});
    q.SetReplicas(replicas);
    std::set<int> busy, elsewhere;
    std::set<std::uint64_t> started, left, waiting;
    std::uint64_t next = 0, last_started = 0;
    double now = 0;
    for (int step = 0; step < 6000; ++step) {
      now += 0.5;
      const int event = std::uniform_int_distribution<int>(0, 4)(rng);
      if (event <= 1) {
        if (q.Arrive(next, std::uniform_int_distribution<int>(1, 10)(rng), now)) {
          waiting.insert(next);
        }
        ++next;
      } else if (event == 2 && !busy.empty()) {
        auto it = busy.begin();
        std::advance(it, std::uniform_int_distribution<size_t>(0, busy.size() - 1)(rng));
        q.Complete(*it);
        busy.erase(it);
      } else if (event == 3 && !waiting.empty()) {
        q.Leave(*waiting.begin());
        left.insert(*waiting.begin());
        waiting.erase(waiting.begin());
      } else if (event == 4) {
        const int j = std::uniform_int_distribution<int>(0, 4)(rng);
        const bool now_busy = elsewhere.count(j) == 0;
        q.SetBusyElsewhere(j, now_busy, now);
        if (now_busy) {
          elsewhere.insert(j);
        } else {
          elsewhere.erase(j);
        }
      }
      for (const auto& s : q.Match(now)) {
        ASSERT_TRUE(busy.insert(s.replica).second) << "replica " << s.replica << " twice";
        ASSERT_EQ(elsewhere.count(s.replica), 0u) << "replica " << s.replica << " busy elsewhere";
        ASSERT_TRUE(started.insert(s.query).second) << "query " << s.query << " twice";
        ASSERT_EQ(left.count(s.query), 0u);
        ASSERT_EQ(waiting.erase(s.query), 1u);
        if (fcfs) {
          ASSERT_GE(s.query, last_started) << "out of arrival order";
          last_started = s.query;
        }
      }
      ASSERT_EQ(q.waiting(), waiting.size());
      if (fcfs) {
        for (const PoolReplica& r : replicas) {
          ASSERT_TRUE(waiting.empty() || busy.count(r.id) || elsewhere.count(r.id));
        }
      }
    }
    EXPECT_GT(started.size(), 1000u);
  }
}

// A replica another router reports busy takes nothing from here until it reports it free, and
// the door's prediction waits for it at least its class's time for one row.
TEST(KairosQueue, AReplicaBusyAtAnotherRouterStartsNothingHereUntilFree) {
  KairosQueue q(TwoClasses());
  const std::vector<PoolReplica> replicas = {{7, 0}};
  q.SetReplicas(replicas);
  q.SetBusyElsewhere(7, true, 0);
  EXPECT_DOUBLE_EQ(*q.PredictMs(3, 0), 1 + 3) << "one row's time there, then its own";
  EXPECT_DOUBLE_EQ(*q.PredictMs(3, 0.5), 0.5 + 3);
  EXPECT_DOUBLE_EQ(*q.PredictMs(3, 5), 3) << "past the least it takes: free any moment";
  q.SetBusyElsewhere(7, true, 5);  // still busy: the estimate stays from when it was first seen
  EXPECT_DOUBLE_EQ(*q.PredictMs(3, 5), 3);
  ASSERT_TRUE(q.Arrive(1, 3, 5));
  EXPECT_TRUE(q.Match(5).empty()) << "busy at the other router";
  q.SetBusyElsewhere(7, false, 6);
  const auto starts = q.Match(6);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].replica, 7);
  q.SetBusyElsewhere(7, true, 6);
  q.Complete(7);
  ASSERT_TRUE(q.Arrive(2, 1, 7));
  EXPECT_TRUE(q.Match(7).empty()) << "its own query done, the other router's not";
}

// The door's prediction: a query alone on whichever replica finishes it soonest, after the one
// in flight there and the queries waiting ahead of it, whatever the pods' batch sizes.
TEST(KairosQueue, PredictsAQueryAtTheReplicaThatFinishesItSoonest) {
  KairosQueue q(TwoClasses(/*fcfs=*/true));  // first come, first served: the busy replica is known
  EXPECT_EQ(q.PredictMs(2, 0), std::nullopt) << "no replica";
  const std::vector<PoolReplica> replicas = {{0, 0}, {1, 1}};
  q.SetReplicas(replicas);
  EXPECT_DOUBLE_EQ(*q.PredictMs(2, 0), 1.6) << "the slow class is quicker on 2 rows";
  EXPECT_DOUBLE_EQ(*q.PredictMs(10, 0), 10);
  q.Arrive(1, 9, 0);  // 9 ms on the fast replica, the first idle one
  ASSERT_EQ(q.Match(0).size(), 1u);
  EXPECT_DOUBLE_EQ(*q.PredictMs(10, 4), 5 + 10) << "the fast replica is free in 5 ms";
  q.Arrive(2, 5, 4);  // waits; goes first to the idle slow replica: 10 ms there
  EXPECT_DOUBLE_EQ(*q.PredictMs(10, 4), 5 + 10) << "the fast one is still free first";
  q.Arrive(3, 5, 4);  // then to the fast one once free: 5 + 5 ms
  EXPECT_DOUBLE_EQ(*q.PredictMs(10, 4), 10 + 10) << "both are taken until 10 ms from now";
}

// Over random queues: never quicker than the query alone on its best class, and a query that
// joins the queue never makes the next one's prediction earlier.
TEST(KairosQueue, APredictionIsNoBetterThanAloneAndGrowsWithTheQueue) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 500; ++trial) {
    KairosQueue q(TwoClasses());
    std::vector<PoolReplica> replicas;
    for (int r = 0; r < 1 + static_cast<int>(rng() % 4); ++r)
      replicas.push_back({r, static_cast<int>(rng() % 2)});
    q.SetReplicas(replicas);
    double now = 0;
    for (std::uint64_t i = 0; i < 6; ++i) {
      const int size = 1 + static_cast<int>(rng() % 10);
      const double before = *q.PredictMs(size, now);
      EXPECT_GE(before, std::min(1.0 * size, 0.4 * size * size) - 1e-9);
      if (!q.Arrive(i, 1 + static_cast<int>(rng() % 10), now)) break;
      EXPECT_GE(*q.PredictMs(size, now), before - 1e-9);
      if (rng() % 2 == 0) q.Match(now);
      now += rng() % 5;
    }
  }
}

// MArk spills exactly when every main replica, after the batches it already holds, would
// finish the request past RT_max.
TEST(ShouldSpill, EveryMainReplicaLateAndNoSooner) {
  EXPECT_TRUE(ShouldSpill({}, 100)) << "no main replica: only the burst class can serve";
  const std::vector<MainReplica> idle = {{0, 4, 30}};
  EXPECT_FALSE(ShouldSpill(idle, 100));
  std::mt19937 rng(5);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<MainReplica> main(std::uniform_int_distribution<int>(1, 4)(rng));
    bool some_in_time = false;
    for (MainReplica& m : main) {
      m = {std::uniform_int_distribution<int>(0, 12)(rng),
           std::uniform_int_distribution<int>(1, 4)(rng),
           std::uniform_real_distribution<double>(5, 40)(rng)};
      const int batches_ahead = (m.outstanding + m.batch - 1) / m.batch;
      some_in_time = some_in_time || (batches_ahead + 1) * m.batch_ms <= 100;
    }
    ASSERT_EQ(ShouldSpill(main, 100), !some_in_time);
  }
}

}  // namespace
}  // namespace pipescale::routing
