// What the operator reads back of a Deployment it manages: anyone may edit the object, so a
// field of the wrong shape reads as absent, never as a crash.
#include <gtest/gtest.h>

#include "api/deployment_view.h"

namespace pipescale::api {
namespace {

using nlohmann::json;

json WithEnv(json env) {
  return {{"spec",
           {{"replicas", 3},
            {"template", {{"spec", {{"containers", {{{"name", "model"}, {"env", env}}}}}}}}}}};
}

ManagedFields ReadManagedFields(const json& deployment, const std::string& batch_env) {
  return api::ReadManagedFields(ReadDeployment(deployment), batch_env);
}

TEST(ManagedFields, ReadsReplicasAndTheBatchEnv) {
  const ManagedFields f =
      ReadManagedFields(WithEnv({{{"name", "MAX_BATCH_SIZE"}, {"value", "8"}}}), "MAX_BATCH_SIZE");
  EXPECT_EQ(f.replicas, 3);
  EXPECT_EQ(f.batch_size, 8);
}

TEST(ManagedFields, AnEnvOfTheWrongShapeReadsAsNoBatch) {
  for (const json& env :
       {json::array({"MAX_BATCH_SIZE=8"}),
        json::array({{{"name", "MAX_BATCH_SIZE"}, {"value", 8}}}),
        json::array({{{"name", "MAX_BATCH_SIZE"}, {"valueFrom", json::object()}}}),
        json::array({{{"name", "MAX_BATCH_SIZE"}, {"value", "eight"}}}), json("MAX_BATCH_SIZE")}) {
    const ManagedFields f = ReadManagedFields(WithEnv(env), "MAX_BATCH_SIZE");
    EXPECT_EQ(f.replicas, 3) << env;
    EXPECT_FALSE(f.batch_size.has_value()) << env;
  }
  EXPECT_FALSE(ReadManagedFields(json::array(), "MAX_BATCH_SIZE").replicas.has_value());
  EXPECT_FALSE(ReadManagedFields(json{{"spec", "x"}}, "MAX_BATCH_SIZE").replicas.has_value());
}

TEST(DeploymentView, ReadsWhatTheReconcilerDecidesFrom) {
  json d = WithEnv({{{"name", "MAX_BATCH_SIZE"}, {"value", "8"}},
                    {{"name", "FROM"}, {"valueFrom", json::object()}}});
  d["metadata"] = {{"name", "shop-a"}, {"generation", 4}, {"labels", {{"app", "x"}}}};
  d["spec"]["template"]["spec"]["containers"][0]["image"] = "example/model:1";
  d["spec"]["template"]["spec"]["containers"][0]["args"] = {"--port", 8080, "8080"};
  d["status"] = {{"replicas", 4}, {"updatedReplicas", 1}, {"observedGeneration", 3}};
  const DeploymentView v = ReadDeployment(d);
  EXPECT_EQ(v.meta.name, "shop-a");
  EXPECT_EQ(v.meta.generation, 4);
  EXPECT_EQ(v.meta.labels.at("app"), "x");
  EXPECT_EQ(v.replicas, 3);
  ASSERT_TRUE(v.container);
  EXPECT_EQ(v.container->name, "model");
  EXPECT_EQ(v.container->image, "example/model:1");
  EXPECT_EQ(v.container->args, (std::vector<std::string>{"--port", "8080"}));
  EXPECT_EQ(v.container->env.size(), 1u) << "only values the operator could have set";
  EXPECT_EQ(v.status_replicas, 4);
  EXPECT_EQ(v.updated_replicas, 1);
  EXPECT_EQ(v.observed_generation, 3);
  EXPECT_EQ(RunningReplicas(v), 4);
}

TEST(DeploymentView, AnythingElseReadsAsAbsent) {
  for (const json& d : {json::array(), json("x"), json{{"spec", "x"}},
                        json{{"spec", {{"replicas", 1e20}}}, {"status", {{"replicas", -1.5}}}},
                        json{{"spec", {{"replicas", json::parse("18446744073709551615")}}}}}) {
    const DeploymentView v = ReadDeployment(d);
    EXPECT_FALSE(v.replicas) << d;
    EXPECT_FALSE(v.container) << d;
    EXPECT_FALSE(v.status_replicas) << d;
    EXPECT_EQ(RunningReplicas(v), 0) << d;
  }
}

// status.conditions is the controller's, read as far as it makes sense: ReplicaFailure's message
// while it is True, its reason where the message is not text, nothing from any other shape.
TEST(DeploymentView, AReplicaFailureIsReadFromAnyConditionsList) {
  const auto failure = [](const json& conditions) {
    return ReadDeployment(json{{"status", {{"conditions", conditions}}}}).replica_failure;
  };
  const json refused = {{"type", "ReplicaFailure"},
                        {"status", "True"},
                        {"reason", "FailedCreate"},
                        {"message", "pods \"a\" is forbidden"}};
  EXPECT_EQ(failure(json::array({refused})), "pods \"a\" is forbidden");
  json no_message = refused;
  no_message["message"] = 7;
  EXPECT_EQ(failure(json::array({1, "x", nullptr, json::array(), no_message})),
            "FailedCreate (no message)");
  json cleared = refused;
  cleared["status"] = "False";
  EXPECT_EQ(failure(json::array({cleared})), "");
  json odd = refused;
  odd["type"] = 5;
  EXPECT_EQ(failure(json::array({odd})), "");
  for (const json& shape : {json("ReplicaFailure"), json(3), json::object(), json(nullptr)}) {
    EXPECT_EQ(failure(shape), "") << shape;
  }
  EXPECT_EQ(ReadDeployment(json{{"status", "x"}}).replica_failure, "");
}

TEST(DeploymentView, ThePatchSetsOnlyWhatDiffers) {
  const DeploymentView v = ReadDeployment(WithEnv({{{"name", "MAX_BATCH_SIZE"}, {"value", "8"}}}));
  EXPECT_EQ(ManagedPatch(v, "MAX_BATCH_SIZE", 3, 8), std::nullopt);
  EXPECT_EQ(*ManagedPatch(v, "MAX_BATCH_SIZE", 5, 8), (json{{"spec", {{"replicas", 5}}}}));
  EXPECT_EQ(
      (*ManagedPatch(v, "MAX_BATCH_SIZE", 3, 4))["spec"]["template"]["spec"]["containers"],
      (json::array({{{"name", "model"},
                     {"env", json::array({{{"name", "MAX_BATCH_SIZE"}, {"value", "4"}}})}}})));
  // Without a container there is nothing to set the batch on.
  EXPECT_EQ(ManagedPatch(ReadDeployment(json{{"spec", {{"replicas", 3}}}}), "MAX_BATCH_SIZE", 3, 4),
            std::nullopt);
}

// A plan's server queue (hpa's) is set as env beside the batch, read back, and patched only where
// it differs; a plan without one leaves whatever the Deployment has.
TEST(DeploymentView, TheServerQueueIsSetOnlyWhereItDiffers) {
  const model::ServerQueue queue{.max_delay_ms = 5, .timeout_ms = 42.4};
  const DeploymentView v = ReadDeployment(WithEnv({{{"name", "MAX_BATCH_SIZE"}, {"value", "8"}},
                                                   {{"name", kMaxQueueDelayEnv}, {"value", "5"}}}));
  EXPECT_EQ(ReadManagedFields(v, "MAX_BATCH_SIZE").server_queue,
            (model::ServerQueue{.max_delay_ms = 5}));
  const auto patch = ManagedPatch(v, "MAX_BATCH_SIZE", 3, 8, queue);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ((*patch)["spec"]["template"]["spec"]["containers"][0]["env"],
            (json::array({{{"name", kQueueTimeoutEnv}, {"value", "42"}}})))
      << "whole milliseconds, and only the timeout: the delay is already 5";
  EXPECT_EQ(ManagedPatch(v, "MAX_BATCH_SIZE", 3, 8), std::nullopt) << "no queue: nothing to set";
  EXPECT_EQ(ServerQueueEnv({.max_delay_ms = 0.2}),
            (std::vector<std::pair<std::string, std::string>>{{kMaxQueueDelayEnv, "1"}}))
      << "a delay that rounds to 0 ms is still one the plan asked for";
  const DeploymentView set =
      ReadDeployment(WithEnv({{{"name", kMaxQueueDelayEnv}, {"value", "5"}},
                              {{"name", kQueueTimeoutEnv}, {"value", "42"}}}));
  EXPECT_EQ(ManagedPatch(set, "", 3, 8, queue), std::nullopt) << "as written, read back the same";
}

// A server that may grow its batches past the plan's holds the most in the batch env and the
// plan's batch beside it; the operator reads back the plan's, and writes nothing the second time.
// Once the two agree again the planned one is kept current, never left stale.
TEST(DeploymentView, AGrownBatchIsWrittenBesideThePlansAndReadBack) {
  const model::ServerQueue grown{.max_delay_ms = 1, .max_batch = 8};
  const auto patch =
      ManagedPatch(ReadDeployment(WithEnv({{{"name", "MAX_BATCH_SIZE"}, {"value", "1"}}})),
                   "MAX_BATCH_SIZE", 3, 1, grown);
  ASSERT_TRUE(patch.has_value());
  const json env = (*patch)["spec"]["template"]["spec"]["containers"][0]["env"];
  EXPECT_EQ(env, (json::array({{{"name", "MAX_BATCH_SIZE"}, {"value", "8"}},
                               {{"name", model::kPlannedBatchEnv}, {"value", "1"}},
                               {{"name", kMaxQueueDelayEnv}, {"value", "1"}}})));
  const DeploymentView written = ReadDeployment(WithEnv(env));
  const ManagedFields read = ReadManagedFields(written, "MAX_BATCH_SIZE");
  EXPECT_EQ(read.batch_size, 1);
  EXPECT_EQ(read.server_queue, grown);
  EXPECT_EQ(ManagedPatch(written, "MAX_BATCH_SIZE", 3, 1, grown), std::nullopt);

  const auto back = ManagedPatch(written, "MAX_BATCH_SIZE", 3, 4, {.max_delay_ms = 1});
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ((*back)["spec"]["template"]["spec"]["containers"][0]["env"],
            (json::array({{{"name", "MAX_BATCH_SIZE"}, {"value", "4"}},
                          {{"name", model::kPlannedBatchEnv}, {"value", "4"}}})));
  const ManagedFields plain =
      ReadManagedFields(WithEnv({{{"name", "MAX_BATCH_SIZE"}, {"value", "4"}},
                                 {{"name", model::kPlannedBatchEnv}, {"value", "4"}}}),
                        "MAX_BATCH_SIZE");
  EXPECT_EQ(plain.batch_size, 4);
  EXPECT_EQ(plain.server_queue.max_batch, 0);
}

}  // namespace
}  // namespace pipescale::api
