// Walking a pipeline's DAG: entries, branches and fan-out as the model's response names them,
// the path a walk took, and the deadline a request gets.
#include "routing/walk.h"

#include <gtest/gtest.h>

#include "api/pipeline_parse.h"

namespace pipescale::router {
namespace {

using nlohmann::json;

// detect -> {classify, recognize}; detect -> count -> (sink)
model::Pipeline Traffic() {
  auto parsed = api::ParsePipeline(R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: traffic}
spec:
  hardwareClasses: [{name: cpu}]
  tasks:
    - {name: detect, next: [{task: classify}, {task: recognize}], variants: [{name: v, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {c: 5}}}]}]}
    - {name: classify, variants: [{name: v, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {c: 5}}}]}]}
    - {name: recognize, variants: [{name: v, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {c: 5}}}]}]}
  paths:
    - {name: cars, tasks: [detect, classify], sloMs: 200}
    - {name: faces, tasks: [detect, recognize], sloMs: 300, priority: sheddable}
)");
  EXPECT_TRUE(parsed.pipeline) << (parsed.errors.empty() ? "" : parsed.errors[0].ToString());
  return *parsed.pipeline;
}

TEST(Walk, ANamedPathEntersAtItsFirstTaskAndFollowsItsTasks) {
  const Graph g(Traffic());
  EXPECT_EQ(*g.Entry("cars"), std::vector<std::string>{"detect"});
  EXPECT_EQ(*g.Next("cars", "detect", json::object()), (std::vector<Call>{{"classify", 1}}));
  EXPECT_TRUE(g.Next("cars", "classify", json::object())->empty());
  // The detector found 3 objects: 3 requests to the path's next task, none to the other.
  EXPECT_EQ(*g.Next("cars", "detect", json{{kNextParameter, {{"classify", 3}, {"recognize", 2}}}}),
            (std::vector<Call>{{"classify", 3}}));
  // None found: the path ends there.
  EXPECT_TRUE(g.Next("cars", "detect", json{{kNextParameter, {{"classify", 0}}}})->empty());
  EXPECT_EQ(g.Entry("trucks").error().kind, ErrorKind::kNotFound);
}

TEST(Walk, WithoutAPathTheModelsResponseChoosesBranchesAndFanOut) {
  const Graph g(Traffic());
  EXPECT_EQ(*g.Entry(""), std::vector<std::string>{"detect"});
  // Nothing named: every edge once, as an ensemble.
  EXPECT_EQ(*g.Next("", "detect", json::object()),
            (std::vector<Call>{{"classify", 1}, {"recognize", 1}}));
  EXPECT_EQ(*g.Next("", "detect", json{{kNextParameter, {{"recognize", 2}}}}),
            (std::vector<Call>{{"recognize", 2}}));
  // A model naming a task it has no edge to, or an absurd count, is the model's fault.
  EXPECT_EQ(g.Next("", "detect", json{{kNextParameter, {{"detect", 1}}}}).error().kind,
            ErrorKind::kInvalid);
  EXPECT_FALSE(g.Next("", "detect", json{{kNextParameter, {{"classify", kMaxFanOut + 1}}}}).ok());
  EXPECT_FALSE(g.Next("", "detect", json{{kNextParameter, {{"classify", "3"}}}}).ok());
  EXPECT_FALSE(g.Next("", "detect", json{{kNextParameter, 3}}).ok());
}

TEST(Walk, AWalkNamesThePathItTookAndTheDeadlineFollowsThePath) {
  const Graph g(Traffic());
  EXPECT_EQ(g.PathOf({"detect", "recognize"}), "faces");
  EXPECT_EQ(g.PathOf({"detect"}), "");
  EXPECT_EQ(g.DeadlineMs("cars"), 200);
  EXPECT_EQ(g.DeadlineMs(""), 300);  // the models may send it down the slower path
  EXPECT_EQ(g.PathTasks("faces"), (std::vector<std::string>{"detect", "recognize"}));
  EXPECT_TRUE(g.PathTasks("trucks").empty());
  EXPECT_EQ(g.PriorityOf("faces"), model::Priority::kSheddable);
  EXPECT_EQ(g.PriorityOf("cars"), model::Priority::kStandard);  // the default
  EXPECT_EQ(g.PriorityOf(""), model::Priority::kStandard);
}

// Where a request ends, for Loki's last-task dropping: a named path's last task, or a task
// with nowhere to go.
TEST(Walk, ARequestEndsAtItsPathsLastTaskOrWhereNoEdgeLeads) {
  const Graph g(Traffic());
  EXPECT_TRUE(g.IsLast("faces", "recognize"));
  EXPECT_FALSE(g.IsLast("faces", "detect"));
  EXPECT_FALSE(g.IsLast("", "detect"));
  EXPECT_TRUE(g.IsLast("", "recognize"));
  EXPECT_FALSE(g.IsLast("nowhere", "recognize"));
}

// The response's counts, read once, route as the JSON does: the simulator routes on counts it
// draws, the router on counts a model sends, by the same rule.
TEST(Walk, CountsReadFromAResponseRouteAsTheResponseDoes) {
  const Graph g(Traffic());
  for (const json& parameters : {json::object(), json{{kNextParameter, {{"classify", 2}}}},
                                 json{{kNextParameter, {{"classify", 0}, {"recognize", 4}}}},
                                 json{{kNextParameter, json::object()}}}) {
    auto counts = ReadNext(parameters);
    ASSERT_TRUE(counts.ok()) << parameters;
    for (const std::string path : {"", "cars", "faces"}) {
      auto from_json = g.Next(path, "detect", parameters);
      auto from_counts = g.Next(path, "detect", *counts);
      ASSERT_EQ(from_json.ok(), from_counts.ok()) << parameters << " " << path;
      if (from_json.ok()) {
        EXPECT_EQ(*from_json, *from_counts) << parameters << " " << path;
      }
    }
  }
  // A count out of range or of the wrong type is the model's fault, whichever task it names.
  for (const json& bad : {json{{kNextParameter, {{"recognize", -1}}}},
                          json{{kNextParameter, {{"classify", kMaxFanOut + 1}}}},
                          json{{kNextParameter, {{"classify", "2"}}}}, json{{kNextParameter, 3}}}) {
    auto counts = ReadNext(bad);
    ASSERT_FALSE(counts.ok()) << bad;
    EXPECT_NE(counts.error().message.find(kNextParameter), std::string::npos);
    EXPECT_FALSE(g.Next("cars", "detect", bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace pipescale::router
