// What the operator reads back of a Deployment it manages: anyone may edit the object, so a
// field of the wrong shape reads as absent, never as a crash.
#include <gtest/gtest.h>

#include "api/deployment.h"

namespace pipescale::api {
namespace {

using nlohmann::json;

json WithEnv(json env) {
  return {{"spec",
           {{"replicas", 3},
            {"template", {{"spec", {{"containers", {{{"name", "model"}, {"env", env}}}}}}}}}}};
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

}  // namespace
}  // namespace pipescale::api
