// One request's walk as the router serves it and the simulator replays it: each step over a
// view of the task loads, and how the walk ends.
#include "routing/walk.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "api/pipeline_parse.h"
#include "support/parsed_pipeline.h"
#include "support/pipelines.h"

namespace pipescale::routing {
namespace {

using nlohmann::json;
using namespace testing::traffic;  // NOLINT(google-build-using-namespace): the test's vocabulary

model::Pipeline Traffic() { return testing::TrafficPipeline(); }

// The loads as a test writes them down: pods per task, batches the router forms, a matcher's
// prediction, MArk's burst class.
struct Loads final : TaskLoads {
  std::vector<std::vector<PodLoad>> pods = std::vector<std::vector<PodLoad>>(3);
  std::map<std::pair<int, int>, double> fill;  // (task, variant) -> ms
  std::map<int, double> matched;               // task -> ms
  std::map<int, SpillPool> spill;
  std::set<int> restarting;

  int PodCount(int task) const override { return static_cast<int>(pods[task].size()); }
  PodLoad Pod(int task, int index) const override { return pods[task][index]; }
  double FillMs(int task, int variant) const override {
    for (const auto& [key, ms] : fill) {
      if (key.first == task && (variant < 0 || key.second == variant)) return ms;
    }
    return 0;
  }
  std::optional<double> MatchedMs(int task, int) const override {
    const auto it = matched.find(task);
    return it == matched.end() ? std::nullopt : std::optional<double>(it->second);
  }
  std::optional<SpillPool> Spill(int task) const override {
    const auto it = spill.find(task);
    return it == spill.end() ? std::nullopt : std::optional<SpillPool>(it->second);
  }
  bool Restarting(int task) const override { return restarting.contains(task); }
};

PodLoad Idle(int variant, double batch_ms, int hardware_class = kGpu) {
  return {.variant = variant, .hardware_class = hardware_class, .batch_ms = batch_ms};
}

struct Fixture {
  model::Pipeline pipeline = Traffic();
  Graph graph{pipeline};
  Policy policy;
  Walker walker{graph, nullptr, policy};
};

TEST(WalkTest, ADeadlineIsThePathsSloOrTheTimeoutWhenNoneBoundsIt) {
  Fixture f;
  EXPECT_EQ(f.walker.Start(kCars, 1, 1000).deadline_ms, 1200);
  EXPECT_EQ(f.walker.Start(-1, 1, 1000).deadline_ms, 1300);  // the longest path's
  model::Pipeline no_paths = Traffic();
  no_paths.spec.paths.clear();
  const Graph graph(no_paths);
  const Walker walker(graph, nullptr, f.policy);
  EXPECT_EQ(walker.Start(-1, 1, 1000).deadline_ms, 1000 + kCallTimeoutMs);
}

TEST(WalkTest, TheDoorAdmitsWhatItsPodsServeInTimeAndRefusesTheRest) {
  Fixture f;
  Loads loads;
  loads.pods[kDetect] = {Idle(kBig, 40)};
  loads.pods[kClassify] = {Idle(0, 20)};
  loads.pods[kRecognize] = {Idle(0, 20)};
  Walk cars = f.walker.Start(kCars, 1, 0);
  EXPECT_EQ(f.walker.AtDoor(loads, cars, 0).kind, DoorStep::Kind::kAdmit);
  // Four batches ahead at detect: 5 x 40 + 20 = 220 ms, past the 200 left.
  loads.pods[kDetect][0].outstanding = 4;
  const DoorStep refused = f.walker.AtDoor(loads, cars, 0);
  ASSERT_EQ(refused.kind, DoorStep::Kind::kRefuse);
  EXPECT_EQ(refused.refusal.status, 503u);
  EXPECT_EQ(refused.refusal.reason, kShedLate);
  EXPECT_NE(refused.refusal.message.find("cars"), std::string::npos);
  // A sheddable path is refused at half its time: 3 batches ahead (180 + 20) fit 300, not 150.
  loads.pods[kDetect][0].outstanding = 3;
  Walk cars3 = f.walker.Start(kCars, 1, 0), faces = f.walker.Start(kFaces, 1, 0);
  EXPECT_EQ(f.walker.AtDoor(loads, cars3, 0).kind, DoorStep::Kind::kAdmit);
  EXPECT_EQ(f.walker.AtDoor(loads, faces, 0).kind, DoorStep::Kind::kRefuse);
  // Without the door, or without a named path, every request goes in.
  loads.pods[kDetect][0].outstanding = 100;
  Walk unnamed = f.walker.Start(-1, 1, 0);
  EXPECT_EQ(f.walker.AtDoor(loads, unnamed, 0).kind, DoorStep::Kind::kAdmit);
  f.policy.admission = false;
  EXPECT_EQ(f.walker.AtDoor(loads, cars, 0).kind, DoorStep::Kind::kAdmit);
}

TEST(WalkTest, ARequestWaitsAtTheDoorForItsPathsPodsUntilItsDeadline) {
  Fixture f;
  Loads loads;
  loads.pods[kDetect] = {Idle(kBig, 40)};
  Walk cars = f.walker.Start(kCars, 1, 0);
  const DoorStep wait = f.walker.AtDoor(loads, cars, 100);
  ASSERT_EQ(wait.kind, DoorStep::Kind::kWait);
  EXPECT_EQ(wait.again_ms, 100 + kDoorPollMs);
  const DoorStep gone = f.walker.AtDoor(loads, cars, 200 - kDoorPollMs);
  ASSERT_EQ(gone.kind, DoorStep::Kind::kRefuse);
  EXPECT_EQ(gone.refusal.reason, kShedNoPod);
  EXPECT_NE(gone.refusal.message.find("classify"), std::string::npos) << gone.refusal.message;
  loads.pods[kClassify] = {Idle(0, 20)};
  EXPECT_EQ(f.walker.AtDoor(loads, cars, 100).kind, DoorStep::Kind::kAdmit);
  EXPECT_FALSE(cars.cold);  // without scale to zero the deadline bounds the wait
  EXPECT_EQ(cars.deadline_ms, 200);
}

// A call whose task has no pod left to try: where the pod left it unanswered (its process gone,
// the table not showing it yet) or the task's pods are restarting, the visit waits for a pod up to
// the cold hold, as the door does. A pod's failure that answered (a 500) is the visit's error, and
// a task whose pods are gone with none restarting (still to be placed) is not waited for.
TEST(WalkTest, AVisitWhoseOnlyPodLeftItUnansweredWaitsForAPod) {
  Fixture f;
  const CallVerdict refused{.kind = CallVerdict::Kind::kRetry,
                            .error = {ErrorKind::kTransient, "connection refused"},
                            .eject = true};
  const Error none = f.walker.NoPodLeft(kClassify, refused);
  EXPECT_EQ(none.kind, ErrorKind::kNotFound);
  EXPECT_NE(none.message.find("connection refused"), std::string::npos) << none.message;
  const CallVerdict failed{.kind = CallVerdict::Kind::kRetry,
                           .error = {ErrorKind::kTransient, "HTTP 500"}};
  EXPECT_EQ(f.walker.NoPodLeft(kClassify, failed), failed.error);

  Loads died;  // the table still lists the pod that left the call unanswered
  died.pods[kClassify] = {Idle(0, 20)};
  Walk cars = f.walker.Start(kCars, 1, 0);
  EXPECT_FALSE(f.walker.WaitsForPod(died, cars, kClassify, failed.error, 50));
  EXPECT_FALSE(cars.cold);
  ASSERT_TRUE(f.walker.WaitsForPod(died, cars, kClassify, none, 50));
  EXPECT_TRUE(cars.cold);
  EXPECT_EQ(cars.deadline_ms, f.pipeline.ColdHoldMs(kCars));
  EXPECT_FALSE(f.walker.WaitsForPod(died, cars, kClassify, none, cars.deadline_ms - kDoorPollMs))
      << "no poll of the hold left";

  Loads placing;  // no pod, none restarting
  Walk later = f.walker.Start(kCars, 1, 0);
  EXPECT_FALSE(f.walker.WaitsForPod(placing, later, kClassify, f.walker.NoPod(kClassify), 50));
  EXPECT_FALSE(later.cold);
  placing.restarting.insert(kClassify);
  EXPECT_TRUE(f.walker.WaitsForPod(placing, later, kClassify, f.walker.NoPod(kClassify), 50));
}

// A task whose only pod is restarting (a crash the kubelet restarts in place): past its own
// deadline, a request waits up to the path's cold hold for it, as for a wake, and is served once
// the pod is back. A task whose pods are still to be placed is waited for within the deadline
// only: the cluster may be full for minutes.
TEST(WalkTest, ARequestIsHeldForAPodRestartingNotForOneToBePlaced) {
  Fixture f;
  ASSERT_FALSE(f.pipeline.spec.scale_to_zero);
  const double hold = f.pipeline.ColdHoldMs(kCars);
  EXPECT_GT(hold, 200) << "longer than the SLO";
  Loads loads;
  loads.pods[kDetect] = {Idle(kBig, 40)};
  Walk placed = f.walker.Start(kCars, 1, 0);
  ASSERT_EQ(f.walker.AtDoor(loads, placed, 100).kind, DoorStep::Kind::kWait);
  EXPECT_EQ(f.walker.AtDoor(loads, placed, 200 - kDoorPollMs).refusal.reason, kShedNoPod);
  EXPECT_FALSE(placed.cold);

  loads.restarting = {kClassify};
  Walk held = f.walker.Start(kCars, 1, 0);
  ASSERT_EQ(f.walker.AtDoor(loads, held, 100).kind, DoorStep::Kind::kWait);
  EXPECT_TRUE(held.cold) << "held from the first look: a pod that comes back with little of the "
                            "SLO left must not see it refused as late";
  ASSERT_EQ(f.walker.AtDoor(loads, held, 200 - kDoorPollMs).kind, DoorStep::Kind::kWait);
  EXPECT_EQ(held.deadline_ms, hold);
  EXPECT_EQ(f.walker.AtDoor(loads, held, hold - kDoorPollMs).refusal.reason, kShedNoPod)
      << "not back within the hold";
  Walk back = f.walker.Start(kCars, 1, 0);
  ASSERT_EQ(f.walker.AtDoor(loads, back, 200 - kDoorPollMs).kind, DoorStep::Kind::kWait);
  loads.pods[kClassify] = {Idle(0, 20)};
  EXPECT_EQ(f.walker.AtDoor(loads, back, 2500).kind, DoorStep::Kind::kAdmit)
      << "served once its pod is back, past its SLO";

  // Back but busy: a held request waits for what the pods have to spare (half an SLO), where one
  // that has just come, and can still make its SLO, goes in first.
  loads.pods[kClassify].clear();
  Walk busy = f.walker.Start(kCars, 1, 0);
  ASSERT_EQ(f.walker.AtDoor(loads, busy, 200 - kDoorPollMs).kind, DoorStep::Kind::kWait);
  ASSERT_TRUE(busy.cold);
  loads.pods[kClassify] = {Idle(0, 20)};
  loads.pods[kDetect][0].outstanding = 2;  // 3 x 40 + 20 = 140 ms: within 200, not 100
  EXPECT_EQ(f.walker.AtDoor(loads, busy, 3000).kind, DoorStep::Kind::kWait);
  Walk fresh = f.walker.Start(kCars, 1, 3000);
  EXPECT_EQ(f.walker.AtDoor(loads, fresh, 3000).kind, DoorStep::Kind::kAdmit);
  loads.pods[kDetect][0].outstanding = 0;
  EXPECT_EQ(f.walker.AtDoor(loads, busy, 3020).kind, DoorStep::Kind::kAdmit);
}

// Under scale to zero a request for a sleeping path is held for its cold hold (its slowest
// class's start-up plus its SLO, or holdSeconds), and served within it once its pods are up;
// one that finds its pods up is served within its SLO as always.
TEST(WalkTest, AColdRequestWaitsForItsPathsPodsUpToItsColdHold) {
  Fixture f;
  f.pipeline.spec.scale_to_zero = model::ScaleToZero{.after_idle_seconds = 60};
  for (model::HardwareClass& c : f.pipeline.spec.hardware_classes) c.startup_seconds = 0;
  f.pipeline.spec.hardware_classes[kGpu].startup_seconds = 30;
  const Graph graph(f.pipeline);
  const Walker walker(graph, nullptr, f.policy);
  const double hold = f.pipeline.ColdHoldMs(kCars);
  EXPECT_EQ(hold, 1000 * (30 + model::kWakeAllowanceSeconds) + 200);
  EXPECT_EQ(graph.ColdHoldMs(kCars), hold);
  EXPECT_GE(graph.ColdHoldMs(-1), hold);  // the longest path's
  Loads loads;
  Walk cars = walker.Start(kCars, 1, 0);
  ASSERT_EQ(walker.AtDoor(loads, cars, 0).kind, DoorStep::Kind::kWait);
  EXPECT_TRUE(cars.cold);
  EXPECT_EQ(cars.deadline_ms, hold);
  // Still waiting past its SLO, up to the hold; refused (503, no-pod) only then.
  EXPECT_EQ(walker.AtDoor(loads, cars, 5000).kind, DoorStep::Kind::kWait);
  EXPECT_EQ(walker.AtDoor(loads, cars, hold - kDoorPollMs).refusal.reason, kShedNoPod);
  // Its pods up after 29 s: in, with the rest of the hold to be served in.
  Walk later = walker.Start(kCars, 1, 0);
  ASSERT_EQ(walker.AtDoor(loads, later, 0).kind, DoorStep::Kind::kWait);
  for (int t : {kDetect, kClassify, kRecognize}) loads.pods[t] = {Idle(0, 20)};
  loads.pods[kDetect] = {Idle(kBig, 40)};
  EXPECT_EQ(walker.AtDoor(loads, later, 29000).kind, DoorStep::Kind::kAdmit);
  EXPECT_EQ(later.deadline_ms, hold);
  // A warm request is not cold: its SLO is its deadline.
  Walk warm = walker.Start(kCars, 1, 40000);
  EXPECT_EQ(walker.AtDoor(loads, warm, 40000).kind, DoorStep::Kind::kAdmit);
  EXPECT_FALSE(warm.cold);
  EXPECT_EQ(warm.deadline_ms, 40200);
  // holdSeconds overrides the rule.
  f.pipeline.spec.scale_to_zero->hold_seconds = 5;
  EXPECT_EQ(f.pipeline.ColdHoldMs(kCars), 5000);
}

// A wake's backlog: while requests held for the path's pods are not yet answered, a request the
// door would refuse as late (the backlog fills the queues) is held behind them, cold, up to the
// path's cold hold, and let in on the held requests' terms; one it admits goes in with the same
// hold as its deadline. Neither is one of the backlog. With no backlog, the same queues refuse
// it at once, as they refuse a load the pods cannot serve.
TEST(WalkTest, ARequestBehindAWakesBacklogIsHeldWithItNotRefusedNorCutAtItsSlo) {
  Fixture f;
  f.pipeline.spec.scale_to_zero = model::ScaleToZero{.after_idle_seconds = 60};
  const Graph graph(f.pipeline);
  const Walker walker(graph, nullptr, f.policy);
  const double hold = f.pipeline.ColdHoldMs(kCars);
  Loads loads;
  loads.pods[kDetect] = {Idle(kBig, 40)};
  loads.pods[kClassify] = {Idle(0, 20)};
  loads.pods[kDetect][0].outstanding = 5;  // 6 x 40 + 20 = 260 ms: past the 200 ms SLO

  Walk alone = walker.Start(kCars, 1, 1000);
  EXPECT_EQ(walker.AtDoor(loads, alone, 1000, /*held_for_pods=*/0).refusal.reason, kShedLate);
  EXPECT_FALSE(alone.cold);

  Walk behind = walker.Start(kCars, 1, 1000);
  ASSERT_EQ(walker.AtDoor(loads, behind, 1000, /*held_for_pods=*/3).kind, DoorStep::Kind::kWait);
  EXPECT_TRUE(behind.cold);
  EXPECT_TRUE(behind.behind_held);
  EXPECT_EQ(behind.deadline_ms, 1000 + hold);
  // Still held once the backlog is gone (a held request keeps its hold), and let in only when
  // the pods would serve it within half an SLO, as the backlog was.
  loads.pods[kDetect][0].outstanding = 2;  // 3 x 40 + 20 = 140 ms: within 200, not 100
  EXPECT_EQ(walker.AtDoor(loads, behind, 1500, 0).kind, DoorStep::Kind::kWait);
  loads.pods[kDetect][0].outstanding = 0;  // 60 ms
  EXPECT_EQ(walker.AtDoor(loads, behind, 1520, 0).kind, DoorStep::Kind::kAdmit);

  // One the pods serve in time goes in at once, on the same terms as with no backlog; behind a
  // backlog it is part of the wake too, and may be answered late (the backlog ahead of it at a
  // later task), not cut at its SLO. Without a backlog, its SLO is its deadline.
  Walk in_time = walker.Start(kCars, 1, 2000);
  EXPECT_EQ(walker.AtDoor(loads, in_time, 2000, 3).kind, DoorStep::Kind::kAdmit);
  EXPECT_TRUE(in_time.cold);
  EXPECT_TRUE(in_time.behind_held);
  EXPECT_EQ(in_time.deadline_ms, 2000 + hold);
  Walk warm = walker.Start(kCars, 1, 2000);
  EXPECT_EQ(walker.AtDoor(loads, warm, 2000, 0).kind, DoorStep::Kind::kAdmit);
  EXPECT_FALSE(warm.cold);
  EXPECT_EQ(warm.deadline_ms, 2200);
  // Past the hold, a request held behind is refused as late.
  loads.pods[kDetect][0].outstanding = 5;
  Walk expires = walker.Start(kCars, 1, 3000);
  ASSERT_EQ(walker.AtDoor(loads, expires, 3000, 3).kind, DoorStep::Kind::kWait);
  EXPECT_EQ(walker.AtDoor(loads, expires, 3000 + hold - kDoorPollMs / 2, 3).refusal.reason,
            kShedLate);
}

// A request that names no path waits, under scale to zero, until every task has a pod.
TEST(WalkTest, AColdRequestNamingNoPathWaitsForEveryTask) {
  Fixture f;
  f.pipeline.spec.scale_to_zero = model::ScaleToZero{.after_idle_seconds = 60};
  const Graph graph(f.pipeline);
  const Walker walker(graph, nullptr, f.policy);
  Loads loads;
  loads.pods[kDetect] = {Idle(kBig, 40)};
  loads.pods[kClassify] = {Idle(0, 20)};
  Walk unnamed = walker.Start(-1, 1, 0);
  EXPECT_EQ(walker.AtDoor(loads, unnamed, 0).kind, DoorStep::Kind::kWait);
  EXPECT_TRUE(unnamed.cold);
  EXPECT_EQ(unnamed.deadline_ms, graph.ColdHoldMs(-1));
  const DoorStep gone = walker.AtDoor(loads, unnamed, unnamed.deadline_ms);
  EXPECT_EQ(gone.refusal.reason, kShedNoPod);
  EXPECT_NE(gone.refusal.message.find("recognize"), std::string::npos) << gone.refusal.message;
  loads.pods[kRecognize] = {Idle(0, 20)};
  Walk now = walker.Start(-1, 1, 0);
  EXPECT_EQ(walker.AtDoor(loads, now, 0).kind, DoorStep::Kind::kAdmit);
}

TEST(WalkTest, APodOfThePlannedVariantTakesTheCallElseAnyOtherThanTheOneTried) {
  Fixture f;
  Loads loads;
  loads.pods[kDetect] = {Idle(kBig, 40), Idle(kSmall, 10), Idle(kBig, 40)};
  loads.pods[kDetect][0].outstanding = 2;
  PodPick pick;
  f.walker.PickPod(loads, kDetect, kBig, -1, 0.5, pick);
  EXPECT_EQ(pick.pod, 2);  // the idle one of the planned variant
  f.walker.PickPod(loads, kDetect, kBig, 2, 0.5, pick);
  EXPECT_EQ(pick.pod, 0);  // a retry goes to another pod of it
  f.walker.PickPod(loads, kDetect, kSmall, 1, 0.5, pick);
  EXPECT_NE(pick.pod, 1);  // none left of the variant: any other pod of the task
  EXPECT_GE(pick.pod, 0);
  f.walker.PickPod(loads, kClassify, -1, -1, 0.5, pick);
  EXPECT_EQ(pick.pod, -1);  // no pod at all
}

TEST(WalkTest, MarksBurstClassTakesACallOnlyWhenEveryMainReplicaWouldBeLate) {
  Fixture f;
  Loads loads;
  loads.pods[kDetect] = {Idle(kBig, 40), Idle(kBig, 40, kSpot)};
  loads.spill[kDetect] = {.hardware_class = kSpot, .rt_max_ms = 100};
  PodPick pick;
  f.walker.PickPod(loads, kDetect, -1, -1, 0.9, pick);
  EXPECT_EQ(pick.pod, 0);
  EXPECT_FALSE(pick.spilled);
  loads.pods[kDetect][0].outstanding = 3;  // 160 ms ahead: late
  f.walker.PickPod(loads, kDetect, -1, -1, 0.1, pick);
  EXPECT_EQ(pick.pod, 1);
  EXPECT_TRUE(pick.spilled);
  f.policy.spill = false;  // the baseline keeps to the main class
  f.walker.PickPod(loads, kDetect, -1, -1, 0.1, pick);
  EXPECT_EQ(pick.pod, 0);
  EXPECT_FALSE(pick.spilled);
}

TEST(WalkTest, LokisPlanChoosesTheVariantAndReroutesWhatWouldBeLate) {
  Fixture f;
  model::AccuracyScalingPlan plan;
  plan.routing = {{"cars", "detect", "", {{"big", 1}}}, {"cars", "classify", "big", {{"v", 1}}}};
  plan.backups = {{"detect", "small", 20}};  // where a late request may go
  const LokiTables loki(plan, f.pipeline);
  const Walker walker(f.graph, &loki, f.policy);
  Loads loads;
  loads.pods[kDetect] = {Idle(kBig, 40), Idle(kSmall, 10)};
  loads.pods[kClassify] = {Idle(0, 20)};
  const Walk cars = walker.Start(kCars, 1, 0);
  VariantStep step = walker.ChooseVariant(loads, cars, kDetect, -1, -1, 0, 0.5);
  EXPECT_EQ(step.kind, VariantStep::Kind::kGo);
  EXPECT_EQ(step.variant, kBig);
  // 150 ms left: big (40) and classify (20) fit.
  EXPECT_EQ(walker.ChooseVariant(loads, cars, kDetect, -1, -1, 50, 0.5).variant, kBig);
  // 50 ms left: big and classify take 60; small and classify 30.
  step = walker.ChooseVariant(loads, cars, kDetect, -1, -1, 150, 0.5);
  EXPECT_EQ(step.kind, VariantStep::Kind::kReroute);
  EXPECT_EQ(step.variant, kSmall);
  // 20 ms left: nothing fits; dropped with a 504.
  step = walker.ChooseVariant(loads, cars, kDetect, -1, -1, 180, 0.5);
  ASSERT_EQ(step.kind, VariantStep::Kind::kDrop);
  EXPECT_EQ(step.drop.status, 504u);
  EXPECT_EQ(step.drop.reason, kNoFasterBackup);
  // Without a plan every variant serves.
  EXPECT_EQ(f.walker.ChooseVariant(loads, cars, kDetect, -1, -1, 180, 0.5).variant, -1);
}

TEST(WalkTest, AFailedCallIsTriedOnceMoreUnlessTheModelRefusedItOrTheDeadlinePassed) {
  Fixture f;
  const Walk cars = f.walker.Start(kCars, 1, 0);
  using Kind = CallVerdict::Kind;
  EXPECT_EQ(f.walker.AfterCall(cars, kDetect, 0, {200, "{}"}, 10).kind, Kind::kDone);
  const CallVerdict refused = f.walker.AfterCall(cars, kDetect, 0, {400, "bad input"}, 10);
  EXPECT_EQ(refused.kind, Kind::kFail);
  EXPECT_EQ(StatusOf(refused.error.kind), 502u);
  EXPECT_NE(refused.error.message.find("bad input"), std::string::npos);
  const CallVerdict reset = f.walker.AfterCall(cars, kDetect, 0, {0, "connection reset"}, 10);
  EXPECT_EQ(reset.kind, Kind::kRetry);
  EXPECT_EQ(StatusOf(reset.error.kind), 502u);
  EXPECT_EQ(f.walker.AfterCall(cars, kDetect, 1, {0, "connection reset"}, 10).kind, Kind::kFail);
  // An overloaded model is no failure of its own: 503 when no other pod serves.
  EXPECT_EQ(StatusOf(f.walker.AfterCall(cars, kDetect, 1, {503, ""}, 10).error.kind), 503u);
  const CallVerdict late = f.walker.AfterCall(cars, kDetect, 0, {500, ""}, 200);
  EXPECT_EQ(late.kind, Kind::kFail);
  EXPECT_EQ(StatusOf(late.error.kind), 504u);
  EXPECT_FALSE(f.walker.BeforeCall(cars, kDetect, 199).has_value());
  EXPECT_EQ(f.walker.BeforeCall(cars, kDetect, 199.5)->kind, ErrorKind::kExpired);
}

TEST(WalkTest, APodThatLeftACallUnansweredIsLeftOutButNotForRefusingOrBeingLate) {
  Fixture f;
  const Walk cars = f.walker.Start(kCars, 1, 0);
  EXPECT_TRUE(f.walker.AfterCall(cars, kDetect, 0, {0, "connection refused"}, 10).eject);
  EXPECT_TRUE(f.walker.AfterCall(cars, kDetect, 1, {0, "no answer within 120 ms"}, 130).eject);
  // A pod that answered other calls meanwhile is alive, only slow to this one.
  EXPECT_FALSE(
      f.walker.AfterCall(cars, kDetect, 0, {0, "no answer within 120 ms", true}, 130).eject);
  EXPECT_FALSE(f.walker.AfterCall(cars, kDetect, 0, {503, "overloaded"}, 10).eject);
  EXPECT_FALSE(f.walker.AfterCall(cars, kDetect, 0, {500, "model error"}, 10).eject);
  EXPECT_FALSE(f.walker.AfterCall(cars, kDetect, 0, {400, "bad input"}, 10).eject);
  // Past the deadline a silent pod may only have been busy: the request is late, the pod stays.
  EXPECT_FALSE(f.walker.AfterCall(cars, kDetect, 0, {0, "no answer"}, 200).eject);
  // Longer each time in a row, up to a bound.
  double last = 0;
  for (int times = 1; times <= 8; ++times) {
    EXPECT_GE(EjectMs(times), last);
    last = EjectMs(times);
  }
  EXPECT_EQ(EjectMs(1), kEjectMs);
  EXPECT_EQ(EjectMs(2), 2 * kEjectMs);
  EXPECT_EQ(last, 16 * kEjectMs);
}

TEST(WalkTest, PicksLeaveOutAnEjectedPodWhileAnotherCanTakeTheCall) {
  Fixture f;
  Loads loads;
  loads.pods[kDetect] = {Idle(kBig, 40), Idle(kBig, 40), Idle(kBig, 40)};
  loads.pods[kDetect][1].ejected = true;
  PodPick pick;
  for (double u : {0.0, 0.3, 0.5, 0.7, 0.99}) {
    f.walker.PickPod(loads, kDetect, kBig, -1, u, pick);
    EXPECT_NE(pick.pod, 1) << u;
    EXPECT_GE(pick.pod, 0);
  }
  // The only other pod already tried: the ejected one still beats none.
  loads.pods[kDetect].pop_back();
  f.walker.PickPod(loads, kDetect, kBig, 0, 0.5, pick);
  EXPECT_EQ(pick.pod, 1);
  // Every pod ejected: they are all candidates again.
  loads.pods[kDetect][0].ejected = true;
  f.walker.PickPod(loads, kDetect, kBig, -1, 0.5, pick);
  EXPECT_GE(pick.pod, 0);
}

TEST(WalkTest, AnAttemptIsGivenUpOnAtHalfItsBudgetOnlyWhereAnotherPodCanServeTheRest) {
  Fixture f;
  const Walk cars = f.walker.Start(kCars, 1, 0);  // deadline 200 ms, grace 50
  Loads loads;
  loads.pods[kDetect] = {Idle(kBig, 10), Idle(kBig, 10)};
  const double all = 200 - 20 + kGraceMs;
  // Half the time left (and its grace), leaving the rest to the other pod.
  EXPECT_DOUBLE_EQ(f.walker.AttemptTimeoutMs(loads, cars, kDetect, 0, 0, 20), all / 2);
  // The last attempt, or no other pod that is not ejected: all of it.
  EXPECT_DOUBLE_EQ(f.walker.AttemptTimeoutMs(loads, cars, kDetect, 0, 1, 20), all);
  loads.pods[kDetect][1].ejected = true;
  EXPECT_DOUBLE_EQ(f.walker.AttemptTimeoutMs(loads, cars, kDetect, 0, 0, 20), all);
  loads.pods[kDetect][1].ejected = false;
  // A pod whose d(b) is not known is not judged slow.
  loads.pods[kDetect][0].batch_ms = 0;
  EXPECT_DOUBLE_EQ(f.walker.AttemptTimeoutMs(loads, cars, kDetect, 0, 0, 20), all);
  // A queue ahead buys time: kSlowFactor times the batches it predicts, never less as the queue
  // grows, but never past what leaves the other pod its own time (10 ms idle): a silent pod
  // holding the calls of many requests looks like a long queue.
  loads.pods[kDetect][0] = Idle(kBig, 30);
  double last = 0;
  for (int ahead = 0; ahead <= 8; ++ahead) {
    loads.pods[kDetect][0].outstanding = ahead;
    const double ms = f.walker.AttemptTimeoutMs(loads, cars, kDetect, 0, 0, 20);
    EXPECT_GE(ms, std::min(all - 10, kSlowFactor * (ahead + 1) * 30) - 1e-9) << ahead;
    EXPECT_LE(ms, all - 10);
    EXPECT_GE(ms, last);
    last = ms;
  }
  EXPECT_DOUBLE_EQ(last, all - 10);
  // Kairos's matched replica (no pod index): all of it.
  EXPECT_DOUBLE_EQ(f.walker.AttemptTimeoutMs(loads, cars, kDetect, -1, 0, 20), all);
  // The other pod so loaded that it would not serve the call in the half left: all of it (under
  // overload a retry only adds a call to another queue).
  loads.pods[kDetect][0] = Idle(kBig, 10);
  for (int ahead = 0; ahead <= 30; ++ahead) {
    loads.pods[kDetect][1].outstanding = ahead;
    const double other_ms = (ahead + 1) * 10;
    const double ms = f.walker.AttemptTimeoutMs(loads, cars, kDetect, 0, 0, 20);
    EXPECT_DOUBLE_EQ(ms, other_ms >= all / 2 ? all : all / 2) << ahead;
  }
  // The pod's own queue long (a silent pod holding many calls): no later than leaves the other
  // pod its time.
  loads.pods[kDetect][0].outstanding = 30;
  for (int ahead = 0; ahead <= 30; ++ahead) {
    loads.pods[kDetect][1].outstanding = ahead;
    const double other_ms = (ahead + 1) * 10;
    const double ms = f.walker.AttemptTimeoutMs(loads, cars, kDetect, 0, 0, 20);
    EXPECT_DOUBLE_EQ(ms, other_ms >= all / 2 ? all : all - other_ms) << ahead;
  }
}

TEST(WalkTest, ARequestEndsWithItsFirstFailureOrLateAndCountsUnderEachPathOnce) {
  Fixture f;
  Walk cars = f.walker.Start(kCars, 1, 0);
  f.walker.EndTrail(cars, std::vector<int>{kDetect, kClassify}, 100);
  f.walker.EndTrail(cars, std::vector<int>{kDetect, kClassify}, 120);  // fan-out
  Ending ending = f.walker.Finish(cars, 130);
  EXPECT_EQ(ending.status, 200u);
  ASSERT_EQ(ending.counts.size(), 1u);
  EXPECT_EQ(ending.counts[0].path, kCars);
  EXPECT_EQ(ending.counts[0].ms, 120);
  // Within the grace it is served; past it, a 504.
  Walk late = f.walker.Start(kCars, 1, 0);
  EXPECT_EQ(f.walker.Finish(late, 200 + kGraceMs).status, 200u);
  late = f.walker.Start(kCars, 1, 0);
  EXPECT_EQ(f.walker.Finish(late, 201 + kGraceMs).status, 504u);
  // The models decide: each path its trails took, once; a walk that ended none, unlisted.
  Walk any = f.walker.Start(-1, 1, 0);
  f.walker.EndTrail(any, std::vector<int>{kDetect, kRecognize}, 50);
  f.walker.EndTrail(any, std::vector<int>{kDetect, kClassify}, 60);
  f.walker.EndTrail(any, std::vector<int>{kDetect}, 70);
  ending = f.walker.Finish(any, 80);
  ASSERT_EQ(ending.counts.size(), 3u);
  EXPECT_EQ(ending.counts[0].path, kFaces);
  EXPECT_EQ(ending.counts[1].path, kCars);
  EXPECT_EQ(ending.counts[2].path, -1);
  Walk failed = f.walker.Start(-1, 1, 0);
  failed.Fail({.status = 503, .reason = "a", .message = "first"});
  failed.Fail({.status = 502, .reason = "b", .message = "second"});
  ending = f.walker.Finish(failed, 10);
  EXPECT_EQ(ending.status, 503u);
  EXPECT_EQ(ending.failure.message, "first");
  ASSERT_EQ(ending.counts.size(), 1u);
  EXPECT_EQ(ending.counts[0].path, -1);
}

TEST(WalkTest, TheAnswerIsOneModelsWithEveryStringEscaped) {
  const std::vector<std::string> outputs = {R"({"name":"classify/label","data":[1]})"};
  const std::vector<std::string> paths = {"cars", "a \"quoted\" path"};
  const json answer = json::parse(AnswerJson("traffic", outputs, paths, "id-\n1"));
  EXPECT_EQ(answer["model_name"], "traffic");
  EXPECT_EQ(answer["outputs"][0]["name"], "classify/label");
  EXPECT_EQ(answer["parameters"]["pipescale_paths"], json(paths));
  EXPECT_EQ(answer["id"], "id-\n1");
  EXPECT_FALSE(json::parse(AnswerJson("t", {}, {}, "")).contains("id"));
}

}  // namespace
}  // namespace pipescale::routing
