#include "reconciler/arbiter.h"

#include <gtest/gtest.h>

#include <vector>

#include "support/cluster_objects.h"

namespace pipescale::reconciler {
namespace {

using testing::Node;
using testing::Pipeline;
using testing::Pod;
using testing::PriorityClass;

constexpr double kNow = 1000;

// Three nodes of 4 GPUs, the pool every pipeline's gpu class shares; model pods placed in turn.
struct Cluster {
  ClusterView view;
  int placed = 0;

  Cluster() {
    for (int i = 0; i < 3; ++i) {
      const std::string name = "gpu-" + std::to_string(i);
      view.SetNode(name, ReadNode(Node(name, 4, 48, true)));
    }
  }
  void Run(const std::string& pipeline, int replicas) {
    for (int r = 0; r < replicas; ++r, ++placed) {
      const std::string node = "gpu-" + std::to_string(placed / 4);
      view.SetPod(pipeline + std::to_string(placed), ReadPod(Pod(node, 1, "1", pipeline)));
    }
  }
};

ClusterCapacity Allotted(Arbiter& arbiter, const Cluster& cluster, const model::Pipeline& p) {
  ClusterCapacity capacity = cluster.view.Capacity(p);
  arbiter.Allot(p, capacity, kNow);
  return capacity;
}

// A reconcile of `p` whose plan needs `gpus` replicas of the GPU class (Decision::needs).
ClusterCapacity Planned(Arbiter& arbiter, const Cluster& cluster, const model::Pipeline& p,
                        int gpus) {
  ClusterCapacity capacity = Allotted(arbiter, cluster, p);
  arbiter.Record(p, capacity, {{"gpu", {.replicas = gpus, .tasks = gpus > 0 ? 1 : 0}}}, kNow);
  return capacity;
}

// The first pipeline took all 12 GPUs; the second, of the same priority, needs more than it has.
// Each is held to half, and the first is told to whom it yields.
TEST(Arbiter, DividesAPoolTheFirstToComeTookEqually) {
  Cluster cluster;
  Arbiter arbiter;
  const model::Pipeline a = Pipeline("a"), b = Pipeline("b");
  cluster.Run("a", 12);
  EXPECT_FALSE(Planned(arbiter, cluster, a, 14).classes[0].share) << "alone: no share";
  // b has not planned yet: its share bounds only itself (a is not told before b's plan says
  // what it needs).
  const ClusterCapacity for_b = Planned(arbiter, cluster, b, 9);
  EXPECT_EQ(for_b.classes[0].share, 6);
  EXPECT_EQ(for_b.classes[0].pool, 12);
  EXPECT_TRUE(for_b.yielded.empty()) << "not planned: it says nothing yet";
  EXPECT_EQ(Allotted(arbiter, cluster, b).classes[0].share, 6);
  EXPECT_EQ(Allotted(arbiter, cluster, b).classes[0].Limit(), 0)
      << "the room is not free until the first shrinks";
  const ClusterCapacity for_a = Allotted(arbiter, cluster, a);
  EXPECT_EQ(for_a.classes[0].share, 6);
  EXPECT_EQ(for_a.classes[0].Limit(), 6);
  ASSERT_EQ(for_a.yielded.size(), 1u);
  EXPECT_EQ(for_a.yielded[0].share, 6);
  EXPECT_EQ(for_a.yielded[0].holders, (std::map<std::string, int>{{"ns/b", 6}}));
}

// A pipeline with two GPU classes on the same nodes (two model variants' classes, say).
model::Pipeline TwoGpuClasses(const std::string& name) {
  model::Pipeline p = Pipeline(name);
  model::HardwareClass second = p.spec.hardware_classes[0];
  second.name = "gpu2";
  p.spec.hardware_classes.insert(p.spec.hardware_classes.begin() + 1, second);
  return p;
}

// It claims the pool once: two classes are not two pipelines' parts. Against a pipeline of one
// class that needs as much, each gets half, and its half is split between its classes by what
// each needs; its yielding names only the other.
TEST(Arbiter, APipelineClaimsAPoolOnceWhateverItsClassesOnIt) {
  Cluster cluster;
  Arbiter arbiter;
  const model::Pipeline two = TwoGpuClasses("two");
  cluster.Run("a", 12);
  EXPECT_FALSE(Planned(arbiter, cluster, Pipeline("a"), 12).classes[0].share);
  const auto plan_two = [&] {
    ClusterCapacity capacity = Allotted(arbiter, cluster, two);
    arbiter.Record(two, capacity,
                   {{"gpu", {.replicas = 8, .tasks = 1}}, {"gpu2", {.replicas = 4, .tasks = 1}}},
                   kNow);
  };
  plan_two();
  ASSERT_EQ(cluster.view.Capacity(two).classes.size(), 3u);
  const ClusterCapacity for_two = Allotted(arbiter, cluster, two);
  EXPECT_EQ(for_two.classes[0].share, 4);
  EXPECT_EQ(for_two.classes[1].share, 2);
  EXPECT_FALSE(for_two.classes[2].share) << "the CPU class takes no GPU";
  ASSERT_EQ(for_two.yielded.size(), 2u);
  for (const Yielded& y : for_two.yielded) {
    EXPECT_EQ(y.holders, (std::map<std::string, int>{{"ns/a", 6}})) << y.hardware_class;
  }
  EXPECT_EQ(Allotted(arbiter, cluster, Pipeline("a")).classes[0].share, 6);
}

// Alone on the pool, its two classes do not contend with each other.
TEST(Arbiter, APipelineAloneDoesNotContendWithItself) {
  Cluster cluster;
  Arbiter arbiter;
  const model::Pipeline two = TwoGpuClasses("two");
  ClusterCapacity capacity = Allotted(arbiter, cluster, two);
  arbiter.Record(two, capacity,
                 {{"gpu", {.replicas = 10, .tasks = 1}}, {"gpu2", {.replicas = 10, .tasks = 1}}},
                 kNow);
  const ClusterCapacity again = Allotted(arbiter, cluster, two);
  EXPECT_FALSE(again.classes[0].share);
  EXPECT_FALSE(again.classes[1].share);
  EXPECT_TRUE(again.yielded.empty());
}

TEST(Arbiter, APipelineItHasNoRecordOfKeepsWhatItRuns) {
  Cluster cluster;
  Arbiter arbiter;
  cluster.Run("a", 10);  // a's plans were never recorded (an operator that just started)
  const ClusterCapacity for_b = Allotted(arbiter, cluster, Pipeline("b"));
  EXPECT_EQ(for_b.classes[0].share, 2);
  EXPECT_EQ(for_b.classes[0].Limit(), 2);
}

TEST(Arbiter, PlansThatFitTogetherGetNoShare) {
  Cluster cluster;
  Arbiter arbiter;
  cluster.Run("a", 4);
  Planned(arbiter, cluster, Pipeline("a"), 4);
  Planned(arbiter, cluster, Pipeline("b"), 5);
  const ClusterCapacity for_b = Allotted(arbiter, cluster, Pipeline("b"));
  EXPECT_FALSE(for_b.classes[0].share);
  EXPECT_EQ(for_b.classes[0].Limit(), 8);
  EXPECT_TRUE(for_b.yielded.empty());
}

TEST(Arbiter, AGuaranteeComesFirst) {
  Cluster cluster;
  Arbiter arbiter;
  model::Pipeline b = Pipeline("b");
  b.spec.hardware_classes[0].guaranteed_replicas = 8;
  cluster.Run("a", 12);
  Planned(arbiter, cluster, Pipeline("a"), 12);
  Planned(arbiter, cluster, b, 12);
  EXPECT_EQ(Allotted(arbiter, cluster, b).classes[0].share, 8);
  EXPECT_EQ(Allotted(arbiter, cluster, Pipeline("a")).classes[0].share, 4);
}

TEST(Arbiter, AHigherPriorityIsServedBeforeEqualParts) {
  Cluster cluster;
  Arbiter arbiter;
  cluster.view.SetPriorityClass("online", ReadPriorityClass(PriorityClass("online", 1000)));
  model::Pipeline b = Pipeline("b");
  b.spec.priority_class_name = "online";
  cluster.Run("a", 12);
  Planned(arbiter, cluster, Pipeline("a"), 12);
  EXPECT_EQ(Planned(arbiter, cluster, b, 9).classes[0].Limit(), 12) << "a's pods are its room";
  EXPECT_EQ(Allotted(arbiter, cluster, Pipeline("a")).classes[0].share, 3);
}

TEST(Arbiter, APipelineThatNeedsNoneOfThePoolClaimsNone) {
  Cluster cluster;
  Arbiter arbiter;
  cluster.Run("a", 12);
  Planned(arbiter, cluster, Pipeline("a"), 14);
  Planned(arbiter, cluster, Pipeline("b"), 0);
  EXPECT_FALSE(Allotted(arbiter, cluster, Pipeline("a")).classes[0].share);
  Planned(arbiter, cluster, Pipeline("b"), 8);
  EXPECT_EQ(Allotted(arbiter, cluster, Pipeline("a")).classes[0].share, 6);
}

TEST(Arbiter, TakesNothingThatRunsForASmallGain) {
  Cluster cluster;
  Arbiter arbiter;
  cluster.Run("a", 7);
  cluster.Run("b", 5);
  Planned(arbiter, cluster, Pipeline("a"), 12);
  Planned(arbiter, cluster, Pipeline("b"), 12);
  // Equal parts would move one GPU of twelve: under the 10% a restart must win.
  EXPECT_EQ(Allotted(arbiter, cluster, Pipeline("a")).classes[0].share, 7);
  EXPECT_EQ(Allotted(arbiter, cluster, Pipeline("b")).classes[0].share, 5);
}

// Two pipelines of 7 tasks each on 12 GPUs: halves of 6 would serve neither, so the one running
// first keeps what its tasks need and the other gets none until there is room for all of its.
TEST(Arbiter, GivesNoPipelineAPartTooSmallToRunItsTasks) {
  Cluster cluster;
  Arbiter arbiter;
  cluster.Run("a", 12);
  const auto plan = [&](const std::string& name) {
    ClusterCapacity capacity = Allotted(arbiter, cluster, Pipeline(name));
    arbiter.Record(Pipeline(name), capacity, {{"gpu", {.replicas = 14, .tasks = 7}}}, kNow);
  };
  plan("a");
  plan("b");
  EXPECT_EQ(Allotted(arbiter, cluster, Pipeline("a")).classes[0].share, 12);
  EXPECT_EQ(Allotted(arbiter, cluster, Pipeline("b")).classes[0].share, 0);
}

// A burst's value outlives it for three of the pipeline's scale-down windows (its replicas
// stay one when it is alone): the quiet pipeline is not handed them between bursts.
TEST(Arbiter, ABurstsValueLastsThreeScaleDownWindows) {
  Cluster cluster;
  Arbiter arbiter;
  const auto plan = [&](const std::string& name, double rps, double at) {
    ClusterCapacity capacity = Allotted(arbiter, cluster, Pipeline(name));
    arbiter.Record(Pipeline(name), capacity, {{"gpu", {.replicas = 10, .tasks = 1, .rps = rps}}},
                   at);
  };
  plan("steady", 100, kNow);  // 10 per replica
  plan("bursty", 400, kNow);  // 40 per replica
  EXPECT_EQ(Allotted(arbiter, cluster, Pipeline("bursty")).classes[0].share, 10);
  plan("bursty", 0, kNow + 60);  // the burst has gone, its replicas stay
  EXPECT_EQ(Allotted(arbiter, cluster, Pipeline("bursty")).classes[0].share, 10);
  plan("bursty", 0, kNow + 301);  // past its 300 s window: still the burst's value
  EXPECT_EQ(Allotted(arbiter, cluster, Pipeline("bursty")).classes[0].share, 10);
  plan("bursty", 0, kNow + 3 * 300 + 1);  // past three: the steady one buys more
  EXPECT_EQ(Allotted(arbiter, cluster, Pipeline("bursty")).classes[0].share, 2);
}

TEST(Arbiter, RouterAndOtherPodsAreNotThePoolsToDivide) {
  Cluster cluster;
  cluster.view.SetPod("other", ReadPod(Pod("gpu-0", 2, "1", "")));
  EXPECT_EQ(cluster.view.Capacity(Pipeline("a")).classes[0].pool, 10);
  EXPECT_EQ(cluster.view.Capacity(Pipeline("a")).classes[1].pool, 0)
      << "the CPU class admits no node here";
}

TEST(Arbiter, AsksThePipelinesAShareMovedForToLookAgain) {
  Cluster cluster;
  std::vector<std::string> nudged;
  Arbiter arbiter([&](const std::string& p) { nudged.push_back(p); });
  cluster.Run("a", 12);
  Planned(arbiter, cluster, Pipeline("a"), 12);
  EXPECT_TRUE(nudged.empty());
  Planned(arbiter, cluster, Pipeline("b"), 6);
  EXPECT_EQ(nudged, (std::vector<std::string>{"ns/a"})) << "b's claim is news to a";
  nudged.clear();
  Planned(arbiter, cluster, Pipeline("b"), 6);
  EXPECT_TRUE(nudged.empty()) << "the same claim again is no news";
  Allotted(arbiter, cluster, Pipeline("a"));
  arbiter.PodChanged("ns/a");  // a's pods leave: b may grow into their room
  EXPECT_EQ(nudged, (std::vector<std::string>{"ns/b"}));
  nudged.clear();
  arbiter.Forget("ns/b");
  EXPECT_EQ(nudged, (std::vector<std::string>{"ns/a"}));
  nudged.clear();
  EXPECT_FALSE(Allotted(arbiter, cluster, Pipeline("a")).classes[0].share);
}

TEST(Arbiter, AnOldRecordIsReadAsAbsent) {
  Cluster cluster;
  Arbiter arbiter;
  cluster.Run("a", 4);
  ClusterCapacity for_a = Allotted(arbiter, cluster, Pipeline("a"));
  arbiter.Record(Pipeline("a"), for_a, {{"gpu", {.replicas = 12, .tasks = 1}}},
                 kNow - Arbiter::kRecordSeconds - 1);
  // Only a's four running replicas count against b, which takes the rest.
  EXPECT_EQ(Allotted(arbiter, cluster, Pipeline("b")).classes[0].share, 8);
}

}  // namespace
}  // namespace pipescale::reconciler
