#include "api/event.h"

#include <gtest/gtest.h>

#include "common/strings.h"

namespace pipescale::api {
namespace {

const ObjectMeta kPipeline{.name = "shop", .namespace_name = "ns", .uid = "u-1"};

TEST(Event, NamesThePipelineAndItsOperator) {
  const nlohmann::json e = BuildEvent(
      kPipeline, {.type = "Warning", .reason = "InvalidSpec", .message = "bad", .now = 86400});
  EXPECT_EQ(e["kind"], "Event");
  EXPECT_EQ(e["metadata"]["generateName"], "shop.");
  EXPECT_EQ(e["metadata"]["namespace"], "ns");
  EXPECT_EQ(e["involvedObject"], (nlohmann::json{{"apiVersion", "pipescale.io/v1alpha1"},
                                                 {"kind", "InferencePipeline"},
                                                 {"name", "shop"},
                                                 {"namespace", "ns"},
                                                 {"uid", "u-1"}}));
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_EQ(e["reason"], "InvalidSpec");
  EXPECT_EQ(e["message"], "bad");
  EXPECT_EQ(e["source"]["component"], "pipescale-operator");
  EXPECT_EQ(e["firstTimestamp"], "1970-01-02T00:00:00Z");
  EXPECT_EQ(e["lastTimestamp"], e["firstTimestamp"]);
  EXPECT_EQ(e["count"], 1);
}

TEST(Event, ALongMessageIsCutAtACharacter) {
  // "é" is two bytes; the limit falls inside the last one.
  const std::string message = std::string(kMaxEventMessageBytes - 1, 'a') + "\xC3\xA9";
  const nlohmann::json e = BuildEvent(kPipeline, {.type = "Normal", .message = message});
  const std::string cut = e["message"];
  EXPECT_EQ(cut, std::string(kMaxEventMessageBytes - 1, 'a'));
  EXPECT_TRUE(IsValidUtf8(cut));
  EXPECT_NO_THROW((void)e.dump());
}

}  // namespace
}  // namespace pipescale::api
