// The cluster file of emulated nodes (hack/nodes.yaml) as Node objects: counted names, capacity
// as allocatable, and a clear error for a file that is not one.
#include "api/nodes_file.h"

#include <gtest/gtest.h>

namespace pipescale::api {
namespace {

TEST(NodesFile, CountMakesNumberedNodesWithTheirCapacityAllocatable) {
  auto nodes = ParseNodesFile(
      "nodes:\n"
      "  - {name: gpu, count: 2, labels: {a: b}, capacity: {cpu: '8', nvidia.com/gpu: 4},\n"
      "     taints: [{key: k, value: v, effect: NoSchedule}]}\n"
      "  - {name: cpu, capacity: {cpu: '16'}}\n",
      "f.yaml");
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[0]["metadata"]["name"], "gpu-1");
  EXPECT_EQ((*nodes)[1]["metadata"]["name"], "gpu-2");
  EXPECT_EQ((*nodes)[2]["metadata"]["name"], "cpu");
  EXPECT_EQ((*nodes)[0]["status"]["allocatable"]["nvidia.com/gpu"], "4");
  EXPECT_EQ((*nodes)[0]["status"]["allocatable"]["pods"], "110");
  EXPECT_EQ((*nodes)[0]["metadata"]["labels"]["a"], "b");
  EXPECT_EQ((*nodes)[0]["spec"]["taints"][0]["key"], "k");
}

TEST(NodesFile, WhatIsNotANodesFileIsNamed) {
  for (const char* text :
       {"nodes: 3", "[1, 2]", "nodes: [{count: 2}]", "nodes: [{name: a, count: 0}]",
        "nodes: [{name: a, count: 1.5}]", "nodes: [{name: a, count: 100000}]",
        "nodes: [{name: a, count: 4294967297}]", "{{{"}) {
    auto nodes = ParseNodesFile(text, "f.yaml");
    ASSERT_FALSE(nodes.ok()) << text;
    EXPECT_EQ(nodes.error().message.rfind("f.yaml: ", 0), 0u) << nodes.error().message;
  }
  EXPECT_EQ(ReadNodesFile("/nonexistent/nodes.yaml").error().kind, ErrorKind::kNotFound);
}

}  // namespace
}  // namespace pipescale::api
