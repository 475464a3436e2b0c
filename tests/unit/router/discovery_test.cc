// The routing tables the router's discovery builds, without a cluster: what one table hands the
// next.
#include "router/discovery.h"

#include <gtest/gtest.h>

#include "api/pipeline_parse.h"
#include "support/parsed_pipeline.h"
#include "support/pipelines.h"

namespace pipescale::router {
namespace {

using routing::PodEndpoint;

// The shared one-task pipeline: task `a`, variant `v`.
model::Pipeline OneTask() {
  return testing::ParsedPipeline(testing::OneTaskPipeline("one").dump());
}

PodEndpoint Pod(const std::string& address, double weight) {
  return {.name = address, .address = address, .weight = weight, .variant = "v"};
}

// A batch change gives a busy pod a new profile, and so a new Endpoint: it must still count the
// requests sent to it under the old one, or the picker and the door read it as idle.
TEST(MakeTable, APodKeepsItsRequestsOutstandingAcrossANewProfile) {
  const model::Pipeline pipeline = OneTask();
  Known known;
  const auto first = MakeTable(pipeline, {{"a", {Pod("a:1", 10), Pod("b:1", 10)}}}, known);
  const std::shared_ptr<Endpoint>& a = first->pods[0][0];
  *a->outstanding += 3;

  const auto second = MakeTable(pipeline, {{"a", {Pod("a:1", 20), Pod("b:1", 10)}}}, known);
  const std::shared_ptr<Endpoint>& a2 = second->pods[0][0];
  EXPECT_NE(a2.get(), a.get());  // the new profile
  EXPECT_EQ(a2->weight, 20);
  EXPECT_EQ(a2->outstanding->load(), 3);
  --*a->outstanding;  // an answer to a request sent under the old table
  EXPECT_EQ(a2->outstanding->load(), 2);
  EXPECT_EQ(second->pods[0][1]->outstanding->load(), 0);
  EXPECT_EQ(second->pods[0][1].get(), first->pods[0][1].get());  // unchanged

  // A pod that leaves and comes back is a new pod.
  MakeTable(pipeline, {{"a", {Pod("b:1", 10)}}}, known);
  const auto back = MakeTable(pipeline, {{"a", {Pod("a:1", 20), Pod("b:1", 10)}}}, known);
  EXPECT_EQ(back->pods[0][0]->outstanding->load(), 0);
}

// The rule the door and the model's readiness share: a task with no Ready pod is named.
TEST(RoutingTable, NamesTheFirstTaskWithoutAPod) {
  const model::Pipeline pipeline = OneTask();
  Known known;
  const auto empty = MakeTable(pipeline, {}, known);
  EXPECT_EQ(empty->TaskWithoutPod(), 0);
  EXPECT_EQ(MakeTable(pipeline, {{"a", {Pod("a:1", 10)}}}, known)->TaskWithoutPod(), std::nullopt);
  // A pod of a task the pipeline does not list is no pod of it.
  EXPECT_EQ(MakeTable(pipeline, {{"b", {Pod("b:1", 10)}}}, known)->TaskWithoutPod(), 0);
}

}  // namespace
}  // namespace pipescale::router
