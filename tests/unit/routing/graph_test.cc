// A pipeline's DAG as a request walks it: entries, branches and fan-out as the model's response
// names them, the path a walk took, the deadline a request gets, and the names behind indices.
#include "routing/graph.h"

#include <gtest/gtest.h>

#include "api/pipeline_parse.h"
#include "support/parsed_pipeline.h"
#include "support/pipelines.h"

namespace pipescale::routing {
namespace {

using nlohmann::json;
using namespace testing::traffic;  // NOLINT(google-build-using-namespace): the test's vocabulary

model::Pipeline Traffic() { return testing::TrafficPipeline(); }

TEST(Graph, NamesAndIndicesFollowThePipelinesOrder) {
  const Graph g(Traffic());
  EXPECT_EQ(g.TaskIndex("recognize"), kRecognize);
  EXPECT_EQ(g.TaskName(kClassify), "classify");
  EXPECT_EQ(g.TaskIndex("nowhere"), -1);
  EXPECT_EQ(g.PathIndex("faces"), kFaces);
  EXPECT_EQ(g.PathName(-1), "");
  EXPECT_EQ(g.VariantIndex(kDetect, "small"), 1);
  EXPECT_EQ(g.VariantName(kDetect, -1), "");
  EXPECT_EQ(g.ClassIndex("spot"), 1);
  EXPECT_EQ(*g.FindPath(""), -1);
  EXPECT_EQ(*g.FindPath("cars"), kCars);
  EXPECT_EQ(g.FindPath("trucks").error().kind, ErrorKind::kNotFound);
}

TEST(Graph, ANamedPathEntersAtItsFirstTaskAndFollowsItsTasks) {
  const Graph g(Traffic());
  EXPECT_EQ(g.Entry(kCars), std::vector<int>{kDetect});
  EXPECT_EQ(*g.Next(kCars, kDetect, json::object()), (std::vector<Call>{{kClassify, 1}}));
  EXPECT_TRUE(g.Next(kCars, kClassify, json::object())->empty());
  // The detector found 3 objects: 3 requests to the path's next task, none to the other.
  EXPECT_EQ(*g.Next(kCars, kDetect, json{{kNextParameter, {{"classify", 3}, {"recognize", 2}}}}),
            (std::vector<Call>{{kClassify, 3}}));
  // None found: the path ends there.
  EXPECT_TRUE(g.Next(kCars, kDetect, json{{kNextParameter, {{"classify", 0}}}})->empty());
}

TEST(Graph, WithoutAPathTheModelsResponseChoosesBranchesAndFanOut) {
  const Graph g(Traffic());
  EXPECT_EQ(g.Entry(-1), std::vector<int>{kDetect});
  // Nothing named: every edge once, as an ensemble.
  EXPECT_EQ(*g.Next(-1, kDetect, json::object()),
            (std::vector<Call>{{kClassify, 1}, {kRecognize, 1}}));
  EXPECT_EQ(*g.Next(-1, kDetect, json{{kNextParameter, {{"recognize", 2}}}}),
            (std::vector<Call>{{kRecognize, 2}}));
  // A model naming a task it has no edge to, or an absurd count, is the model's fault.
  EXPECT_EQ(g.Next(-1, kDetect, json{{kNextParameter, {{"detect", 1}}}}).error().kind,
            ErrorKind::kInvalid);
  EXPECT_FALSE(g.Next(-1, kDetect, json{{kNextParameter, {{"nowhere", 1}}}}).ok());
  EXPECT_FALSE(g.Next(-1, kDetect, json{{kNextParameter, {{"classify", kMaxFanOut + 1}}}}).ok());
  EXPECT_FALSE(g.Next(-1, kDetect, json{{kNextParameter, {{"classify", "3"}}}}).ok());
  EXPECT_FALSE(g.Next(-1, kDetect, json{{kNextParameter, 3}}).ok());
}

TEST(Graph, AWalkNamesThePathItTookAndTheDeadlineFollowsThePath) {
  const Graph g(Traffic());
  EXPECT_EQ(g.PathOf(std::vector<int>{kDetect, kRecognize}), kFaces);
  EXPECT_EQ(g.PathOf(std::vector<int>{kDetect}), -1);
  EXPECT_EQ(g.DeadlineMs(kCars), 200);
  EXPECT_EQ(g.DeadlineMs(-1), 300);  // the models may send it down the slower path
  EXPECT_EQ(g.PathTasks(kFaces), (std::vector<int>{kDetect, kRecognize}));
  EXPECT_TRUE(g.PathTasks(-1).empty());
  EXPECT_EQ(g.PriorityOf(kFaces), model::Priority::kSheddable);
  EXPECT_EQ(g.PriorityOf(kCars), model::Priority::kStandard);  // the default
  EXPECT_EQ(g.PriorityOf(-1), model::Priority::kStandard);
}

// Where a request ends, for Loki's last-task dropping: a named path's last task, or a task
// with nowhere to go.
TEST(Graph, ARequestEndsAtItsPathsLastTaskOrWhereNoEdgeLeads) {
  const Graph g(Traffic());
  EXPECT_TRUE(g.IsLast(kFaces, kRecognize));
  EXPECT_FALSE(g.IsLast(kFaces, kDetect));
  EXPECT_FALSE(g.IsLast(-1, kDetect));
  EXPECT_TRUE(g.IsLast(-1, kRecognize));
}

// The response's counts, read once, route as the JSON does: the simulator routes on counts it
// draws, the router on counts a model sends, by the same rule.
TEST(Graph, CountsReadFromAResponseRouteAsTheResponseDoes) {
  const Graph g(Traffic());
  for (const json& parameters : {json::object(), json{{kNextParameter, {{"classify", 2}}}},
                                 json{{kNextParameter, {{"classify", 0}, {"recognize", 4}}}},
                                 json{{kNextParameter, json::object()}}}) {
    auto counts = ReadNext(parameters);
    ASSERT_TRUE(counts.ok()) << parameters;
    for (const int path : {-1, kCars, kFaces}) {
      auto from_json = g.Next(path, kDetect, parameters);
      auto from_counts = g.Next(path, kDetect, *counts);
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
    EXPECT_FALSE(g.Next(kCars, kDetect, bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace pipescale::routing
