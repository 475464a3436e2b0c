#include "routing/admission.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace pipescale::routing {
namespace {

TEST(Admission, WorkAheadCountsWholeBatches) {
  EXPECT_EQ(WorkAheadMs({.outstanding = 0, .batch = 4, .batch_ms = 100}), 0);
  EXPECT_EQ(WorkAheadMs({.outstanding = 1, .batch = 4, .batch_ms = 100}), 100);
  EXPECT_EQ(WorkAheadMs({.outstanding = 5, .batch = 4, .batch_ms = 100}), 200);
  EXPECT_EQ(WorkAheadMs({.outstanding = 3, .batch = 0, .batch_ms = 10}), 30);  // read as 1
}

TEST(Admission, PredictsEachTaskAtItsLeastLoadedPod) {
  const std::vector<TaskNow> path = {
      {.pods = {{.outstanding = 3, .batch = 1, .batch_ms = 50},
                {.outstanding = 1, .batch = 1, .batch_ms = 50}},
       .fill_ms = 0},
      {.pods = {{.outstanding = 0, .batch = 2, .batch_ms = 80}}, .fill_ms = 25}};
  // 50 ahead + 50 at the first task's second pod; 25 to fill + 80 at the second.
  EXPECT_DOUBLE_EQ(PredictedMs(path), 205);
  EXPECT_EQ(Admit(path, 205), Door::kAdmit);
  EXPECT_EQ(Admit(path, 204.9), Door::kRefuse);
}

TEST(Admission, ATaskWithoutPodsMakesTheRequestWait) {
  const std::vector<TaskNow> path = {{.pods = {{.outstanding = 0, .batch = 1, .batch_ms = 5}}},
                                     {.pods = {}}};
  EXPECT_TRUE(std::isinf(PredictedMs(path)));
  EXPECT_EQ(Admit(path, 1e9), Door::kWaitForPods);
}

// The door is monotone: more time left never refuses a request admitted with less, and more
// work queued never admits one refused with less.
TEST(Admission, MoreTimeOrLessWorkNeverRefusesWhatWasAdmitted) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<TaskNow> path(1 + rng() % 4);
    for (TaskNow& t : path) {
      t.fill_ms = rng() % 3 == 0 ? static_cast<double>(rng() % 100) : 0;
      t.pods.resize(1 + rng() % 3);
      for (MainReplica& p : t.pods) {
        p = {.outstanding = static_cast<int>(rng() % 10),
             .batch = 1 + static_cast<int>(rng() % 4),
             .batch_ms = static_cast<double>(10 + rng() % 200)};
      }
    }
    const double remaining = static_cast<double>(rng() % 3000);
    const Door door = Admit(path, remaining);
    if (door == Door::kAdmit) {
      EXPECT_EQ(Admit(path, remaining + 1), Door::kAdmit);
    }
    std::vector<TaskNow> busier = path;
    ++busier[rng() % busier.size()].pods[0].outstanding;
    if (door == Door::kRefuse) {
      EXPECT_EQ(Admit(busier, remaining), Door::kRefuse);
    }
    EXPECT_GE(PredictedMs(busier), PredictedMs(path));
  }
}

// Priorities order who is refused first: with the same queues ahead, whenever a sheddable
// request gets in so does a standard one, and whenever a standard one does, a critical one.
TEST(Admission, SheddableIsRefusedBeforeStandardBeforeCritical) {
  using model::Priority;
  EXPECT_LT(AdmitShare(Priority::kSheddable), AdmitShare(Priority::kStandard));
  EXPECT_LT(AdmitShare(Priority::kStandard), AdmitShare(Priority::kCritical));
  EXPECT_TRUE(std::isinf(AdmitShare(Priority::kCritical)));
  const std::vector<TaskNow> path = {{.pods = {{.outstanding = 4, .batch = 1, .batch_ms = 50}}}};
  for (double remaining = 0; remaining < 1000; remaining += 5) {
    const auto door = [&](Priority p) { return Admit(path, remaining * AdmitShare(p)); };
    if (door(Priority::kSheddable) == Door::kAdmit) {
      EXPECT_EQ(door(Priority::kStandard), Door::kAdmit);
    }
    if (door(Priority::kStandard) == Door::kAdmit) {
      EXPECT_EQ(door(Priority::kCritical), Door::kAdmit);
    }
  }
  // 250 ms of work: with 400 ms left, critical and standard go in, sheddable is refused; with
  // 200 ms left only critical.
  EXPECT_EQ(Admit(path, 400 * AdmitShare(Priority::kCritical)), Door::kAdmit);
  EXPECT_EQ(Admit(path, 400 * AdmitShare(Priority::kStandard)), Door::kAdmit);
  EXPECT_EQ(Admit(path, 400 * AdmitShare(Priority::kSheddable)), Door::kRefuse);
  EXPECT_EQ(Admit(path, 200 * AdmitShare(Priority::kCritical)), Door::kAdmit);
  EXPECT_EQ(Admit(path, 200 * AdmitShare(Priority::kStandard)), Door::kRefuse);
}

}  // namespace
}  // namespace pipescale::routing
