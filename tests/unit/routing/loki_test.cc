// Loki's routing and dropping in the router, against the plan's tables: requests split as the
// tables say, and a request that the queues ahead would make late is let go, dropped or rerouted
// as each policy of the paper's ablation has it.
#include "routing/loki.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <random>

#include "api/pipeline_parse.h"

namespace pipescale::routing {
namespace {

using Kind = Verdict::Kind;

model::Pipeline Pipeline() {
  return *api::ParsePipeline(R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: traffic}
spec:
  hardwareClasses: [{name: gpu}]
  tasks:
    - name: detect
      next: [{task: classify}]
      variants:
        - {name: big, accuracy: 0.9, profiles: [{hardwareClass: gpu, latencyMs: {quadratic: {c: 40}}}]}
        - {name: small, accuracy: 0.6, profiles: [{hardwareClass: gpu, latencyMs: {quadratic: {c: 10}}}]}
    - name: classify
      variants:
        - {name: b7, accuracy: 0.95, profiles: [{hardwareClass: gpu, latencyMs: {quadratic: {c: 30}}}]}
        - {name: b3, accuracy: 0.85, profiles: [{hardwareClass: gpu, latencyMs: {quadratic: {c: 15}}}]}
        - {name: b0, accuracy: 0.7, profiles: [{hardwareClass: gpu, latencyMs: {quadratic: {c: 5}}}]}
  paths: [{name: cars, tasks: [detect, classify], sloMs: 200}]
)")
              .pipeline;
}

model::AccuracyScalingPlan Plan() {
  model::AccuracyScalingPlan plan;
  plan.routing = {{"cars", "detect", "", {{"big", 0.7}, {"small", 0.3}}},
                  {"cars", "classify", "big", {{"b7", 1}}},
                  // Rounded in the ConfigMap: 0.33 + 0.33 + 0.33 is not 1.
                  {"cars", "classify", "small", {{"b7", 0.33}, {"b3", 0.33}, {"b0", 0.33}}}};
  plan.backups = {{"classify", "b0", 20}, {"classify", "b3", 5}, {"classify", "b7", 0}};
  return plan;
}

// The property: over many requests each variant's share is its table's fraction (normalised).
TEST(Loki, RequestsSplitAsTheTablesSay) {
  const LokiTables tables(Plan(), Pipeline());
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  std::map<std::string, int> first, after_small;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    ++first[tables.Route("cars", "detect", "", u(rng))];
    ++after_small[tables.Route("cars", "classify", "small", u(rng))];
  }
  EXPECT_NEAR(first["big"] / double(n), 0.7, 0.01);
  EXPECT_NEAR(first["small"] / double(n), 0.3, 0.01);
  for (const char* v : {"b7", "b3", "b0"}) EXPECT_NEAR(after_small[v] / double(n), 1 / 3.0, 0.01);
  EXPECT_EQ(tables.Route("cars", "classify", "big", 0.999), "b7");
  // No table: any pod of the task serves.
  EXPECT_EQ(tables.Route("trucks", "detect", "", 0.5), "");
}

TEST(Loki, ReroutingMayUseEveryPlannedVariantMostAccurateFirst) {
  const LokiTables tables(Plan(), Pipeline());
  EXPECT_EQ(tables.Variants("classify"), (std::vector<std::string>{"b7", "b3", "b0"}));
  EXPECT_EQ(tables.Variants("detect"), (std::vector<std::string>{"big", "small"}));
  EXPECT_TRUE(tables.Variants("nope").empty());
}

constexpr double kNoPod = std::numeric_limits<double>::infinity();

// classify's variants as a request finds them: the time each would take from here to the end.
std::vector<Option> Options(double b7, double b3, double b0) {
  return {{"b7", b7}, {"b3", b3}, {"b0", b0}};
}

TEST(Loki, EachPolicyTreatsALateRequestAsThePaperSays) {
  const std::vector<Option> on_time = Options(100, 60, 30);
  for (auto p :
       {DropPolicy::kNone, DropPolicy::kLastTask, DropPolicy::kPerTask, DropPolicy::kReroute}) {
    EXPECT_EQ(JudgeLateness(p, "b7", on_time, 150, true), (Verdict{Kind::kGo, "b7", ""}));
  }
  // b7's queue would make it 25 ms late: per-task drops it, last-task only before the last task,
  // rerouting sends it to b3, the most accurate variant still in time.
  const std::vector<Option> behind = Options(120, 90, 40);
  EXPECT_EQ(JudgeLateness(DropPolicy::kNone, "b7", behind, 95, true).kind, Kind::kGo);
  EXPECT_EQ(JudgeLateness(DropPolicy::kLastTask, "b7", behind, 95, true),
            (Verdict{Kind::kDrop, "", "last task"}));
  EXPECT_EQ(JudgeLateness(DropPolicy::kLastTask, "b7", behind, 95, false).kind, Kind::kGo);
  EXPECT_EQ(JudgeLateness(DropPolicy::kPerTask, "b7", behind, 95, false),
            (Verdict{Kind::kDrop, "", "per-task budget"}));
  EXPECT_EQ(JudgeLateness(DropPolicy::kReroute, "b7", behind, 95, false),
            (Verdict{Kind::kReroute, "b3", ""}));
  // Only b0 makes 50 ms; nothing makes 30: dropped rather than served late.
  EXPECT_EQ(JudgeLateness(DropPolicy::kReroute, "b7", behind, 50, false).variant, "b0");
  EXPECT_EQ(JudgeLateness(DropPolicy::kReroute, "b7", behind, 30, false),
            (Verdict{Kind::kDrop, "", "no faster backup"}));
  // Demand past the plan: the table's b0 has a queue, b7 has room. The spill goes up, not only
  // down: the more accurate variant that is in time.
  EXPECT_EQ(JudgeLateness(DropPolicy::kReroute, "b0", Options(80, 200, 300), 100, false).variant,
            "b7");
}

TEST(Loki, AVariantWithoutReadyPodsIsNotLate) {
  // b7 is starting up: the request is not dropped for it, and rerouting takes a variant in time.
  EXPECT_EQ(JudgeLateness(DropPolicy::kPerTask, "b7", Options(kNoPod, 50, 20), 40, true).kind,
            Kind::kGo);
  EXPECT_EQ(JudgeLateness(DropPolicy::kLastTask, "b7", Options(kNoPod, 50, 20), 40, true).kind,
            Kind::kGo);
  EXPECT_EQ(JudgeLateness(DropPolicy::kReroute, "b7", Options(kNoPod, 50, 20), 40, true).variant,
            "b0");
  EXPECT_EQ(JudgeLateness(DropPolicy::kReroute, "b7", Options(kNoPod, 50, 45), 40, true).kind,
            Kind::kGo);
}

// Properties over many requests and queues: per-task drops exactly the requests the planned
// variant would serve late; rerouting never drops one that per-task would serve, never sends one
// where it would be late, and takes the most accurate variant in time.
TEST(Loki, ReroutingDropsNoMoreThanPerTaskAndItsChoicesFit) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> ms(0, 200);
  for (int i = 0; i < 10000; ++i) {
    const std::vector<Option> options = Options(ms(rng), ms(rng), ms(rng));
    const double left = ms(rng);
    const std::string planned = options[i % 3].variant;
    const Verdict per_task = JudgeLateness(DropPolicy::kPerTask, planned, options, left, false);
    const Verdict reroute = JudgeLateness(DropPolicy::kReroute, planned, options, left, false);
    EXPECT_EQ(per_task.kind == Kind::kDrop, options[i % 3].predicted_ms > left);
    if (per_task.kind == Kind::kGo) {
      EXPECT_EQ(reroute, per_task);
    }
    if (reroute.kind == Kind::kReroute) {
      const auto chosen = std::find_if(options.begin(), options.end(), [&](const Option& o) {
        return o.variant == reroute.variant;
      });
      EXPECT_LE(chosen->predicted_ms, left);
      for (auto o = options.begin(); o != chosen; ++o) EXPECT_GT(o->predicted_ms, left);
    }
    if (reroute.kind == Kind::kDrop) {
      for (const Option& o : options) EXPECT_GT(o.predicted_ms, left);
    }
  }
}

}  // namespace
}  // namespace pipescale::routing
