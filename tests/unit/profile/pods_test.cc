#include "profile/pods.h"

#include <gtest/gtest.h>

namespace pipescale::profile {
namespace {

using nlohmann::json;

json Pod(const std::string& name, const std::string& ip, bool ready, json containers) {
  return {{"metadata", {{"name", name}, {"labels", {{"pipescale.io/hardware-class", "cpu"}}}}},
          {"spec", {{"containers", containers}}},
          {"status",
           {{"podIP", ip},
            {"conditions", {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}}}}}};
}

TEST(Pods, TheDeploymentsSelector) {
  const json deployment = {{"spec",
                            {{"selector",
                              {{"matchLabels", {{"app", "detect"}, {"tier", "model"}}},
                               {"matchExpressions",
                                {{{"key", "zone"}, {"operator", "In"}, {"values", {"a", "b"}}},
                                 {{"key", "canary"}, {"operator", "DoesNotExist"}},
                                 {{"key", "gpu"}, {"operator", "Exists"}},
                                 {{"key", "old"}, {"operator", "NotIn"}, {"values", {"x"}}}}}}}}}};
  EXPECT_EQ(*LabelSelector(deployment),
            "app=detect,tier=model,zone in (a,b),!canary,gpu,old notin (x)");
  EXPECT_FALSE(LabelSelector(json{{"spec", json::object()}}).ok());
  EXPECT_FALSE(LabelSelector(json("not a deployment")).ok());
}

TEST(Pods, AReadyPodAtItsHttpPort) {
  const json containers = {{{"name", "sidecar"}, {"ports", {{{"containerPort", 9000}}}}},
                           {{"name", "model"},
                            {"ports", {{{"name", "http"}, {"containerPort", 8081}}}},
                            {"env", {{{"name", "MAX_BATCH_SIZE"}, {"value", "4"}}}}}};
  const json list = {
      {"items",
       {Pod("b", "127.0.0.3", true, containers), Pod("c", "", true, containers),  // no IP yet
        Pod("a", "127.0.0.2", false, containers), Pod("d", "127.0.0.4", true, containers)}}};
  auto pod = PickPod(list, "MAX_BATCH_SIZE");
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_EQ(pod->name, "b");
  EXPECT_EQ(pod->address, "127.0.0.3:8081");
  EXPECT_EQ(pod->batch, 4);
  EXPECT_EQ(pod->hardware_class, "cpu");
  EXPECT_EQ(pod->ready, 2);
  EXPECT_EQ(pod->pods, 4);
  // Without a port named http the first declared, without any the protocol's 8080.
  const json first = {
      {"items", {Pod("p", "fd00::1", true, {{{"ports", {{{"containerPort", 9000}}}}}})}}};
  EXPECT_EQ(PickPod(first, "").value().address, "[fd00::1]:9000");
  const json none = {{"items", {Pod("p", "10.0.0.1", true, json::array({json::object()}))}}};
  EXPECT_EQ(PickPod(none, "").value().address, "10.0.0.1:8080");
  EXPECT_EQ(PickPod(none, "").value().batch, 0);
}

TEST(Pods, NoReadyPod) {
  const json list = {{"items", {Pod("a", "127.0.0.2", false, json::array())}}};
  auto pod = PickPod(list, "");
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(pod.error().message, "none of its 1 pods is Ready with an IP");
  EXPECT_FALSE(PickPod(json::object(), "").ok());
}

}  // namespace
}  // namespace pipescale::profile
