// An InferencePipeline decoded once per version: its spec parsed, its status typed, and the
// stored status kept only when the typed one does not render back to it.
#include "api/pipeline_object.h"

#include <gtest/gtest.h>

#include "api/status_json.h"
#include "support/pipelines.h"

namespace pipescale::api {
namespace {

using nlohmann::json;

json Object() {
  json o = testing::OneTaskPipeline("shop", "ns");
  o["metadata"]["uid"] = "u-1";
  o["metadata"]["generation"] = 2;
  o["metadata"]["resourceVersion"] = "17";
  return o;
}

model::PipelineStatus Written() {
  model::PipelineStatus s;
  s.observed_generation = 2;
  s.total_replicas = 3;
  s.conditions.push_back({.type = "Ready", .status = "True", .reason = "Reconciled"});
  return s;
}

TEST(PipelineObject, ReadsTheMetadataSpecAndStatus) {
  json o = Object();
  o["status"] = StatusToJson(Written());
  const PipelineObject p = ReadPipelineObject(o);
  EXPECT_EQ(p.meta.name, "shop");
  EXPECT_EQ(p.meta.uid, "u-1");
  EXPECT_EQ(p.meta.generation, 2);
  EXPECT_EQ(p.meta.resource_version, "17");
  ASSERT_TRUE(p.parsed.pipeline);
  EXPECT_EQ(p.parsed.pipeline->spec.tasks[0].name, "a");
  EXPECT_EQ(p.status, Written());
  // The operator's own status is not kept twice: the typed one renders back to it.
  EXPECT_FALSE(p.unrendered_status);
  EXPECT_EQ(p.StoredStatus(), o["status"]);
  EXPECT_EQ(p.for_router, "") << "no router asked for";
}

TEST(PipelineObject, KeepsAStoredStatusTheTypedOneDoesNotRenderBackTo) {
  json o = Object();
  o["status"] = StatusToJson(Written());
  o["status"]["foreign"] = "left by someone";
  ::testing::internal::CaptureStderr();  // the dropped field's log line
  const PipelineObject p = ReadPipelineObject(o);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("ns/shop"), std::string::npos);
  EXPECT_EQ(p.status, Written());
  ASSERT_TRUE(p.unrendered_status);
  // The next write's merge patch starts from what is stored, so it removes the field.
  EXPECT_EQ(p.StoredStatus(), o["status"]);
}

TEST(PipelineObject, AnInvalidSpecIsReadWithItsErrors) {
  json o = Object();
  o["spec"]["paths"][0]["sloMs"] = -1;
  o["status"] = {{"observedGeneration", 1}};
  const PipelineObject p = ReadPipelineObject(o);
  EXPECT_FALSE(p.parsed.pipeline);
  ASSERT_FALSE(p.parsed.errors.empty());
  EXPECT_EQ(p.parsed.errors[0].path, "spec.paths[0].sloMs");
  EXPECT_EQ(p.status.observed_generation, 1);
}

TEST(PipelineObject, WhatTheRouterReadsIsKeptWhenThePipelineHasOne) {
  json o = Object();
  o["spec"]["router"] = json::object();
  o["status"] = {{"observedGeneration", 1}};
  const PipelineObject p = ReadPipelineObject(o);
  ASSERT_TRUE(p.parsed.pipeline) << p.parsed.errors[0].ToString();
  const json for_router = json::parse(p.for_router);
  EXPECT_EQ(for_router["metadata"], (json{{"name", "shop"}, {"namespace", "ns"}}));
  EXPECT_EQ(for_router["spec"], o["spec"]);
  EXPECT_FALSE(for_router.contains("status"));
}

TEST(PipelineObject, NeverThrowsOnWhatIsNotAnObject) {
  for (const json& o : {json("x"), json::array(), json(nullptr), json{{"metadata", 5}}}) {
    PipelineObject p;
    EXPECT_NO_THROW(p = ReadPipelineObject(o)) << o;
    EXPECT_FALSE(p.parsed.pipeline) << o;
  }
}

}  // namespace
}  // namespace pipescale::api
