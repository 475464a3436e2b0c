// Pipelines that share a node file, run together: their pods never take more than the nodes
// hold, first come first served leaves the later one short, and the operator's arbiter divides
// the nodes so that both serve; a run is the same for a seed; and what cannot run together is a
// clear error.
#include <gtest/gtest.h>

#include "api/nodes_file.h"
#include "gym/simulation.h"
#include "support/gym_pipelines.h"

namespace pipescale::gym {
namespace {

using nlohmann::json;
using testing::Chain;
using testing::With;

json Named(json pipeline, const std::string& name) {
  pipeline["metadata"]["name"] = name;
  return pipeline;
}

// Two chains of two tasks, each wanting more than half of two 4-CPU nodes at its rate.
struct Contention {
  std::vector<Tenant> tenants;
  Options options = With("", "1:1");

  explicit Contention(double rps = 60) {
    const json chain = Chain({"a", "b"}, 50, 400, 5, 5);
    for (const char* name : {"one", "two"}) {
      tenants.push_back({Named(chain, name), *trace::ParseTrace(std::to_string(rps) + ":300", 7)});
    }
    auto nodes = api::ParseNodesFile(
        "nodes: [{name: small, count: 2, capacity: {cpu: '4', memory: 8Gi}}]", "test");
    options.nodes = *nodes;
  }
};

long Goodput(const PolicyReport& r) { return r.Goodput(); }

TEST(Tenancy, PodsOfEveryPipelineFitTheNodesTogether) {
  Contention c;
  for (const bool divide : {false, true}) {
    auto runs = SimulateTogether(c.tenants, c.options, divide);
    ASSERT_TRUE(runs.ok()) << runs.error().message;
    ASSERT_EQ(runs->size(), 2u);
    const auto& one = (*runs)[0].intervals;
    const auto& two = (*runs)[1].intervals;
    ASSERT_EQ(one.size(), two.size());
    for (size_t i = 0; i < one.size(); ++i) {
      int replicas = 0;
      for (const auto& [task, n] : one[i].replicas) replicas += n;
      for (const auto& [task, n] : two[i].replicas) replicas += n;
      EXPECT_LE(replicas, 8) << "interval " << i << (divide ? " shared" : " first-come");
    }
    EXPECT_EQ((*runs)[0].policy, divide ? kShared : kFirstCome);
  }
}

TEST(Tenancy, TheArbiterLetsBothServeWhereTheFirstToComeTakesAll) {
  Contention c;
  auto first = SimulateTogether(c.tenants, c.options, false);
  auto shared = SimulateTogether(c.tenants, c.options, true);
  ASSERT_TRUE(first.ok() && shared.ok());
  const long first_worst = std::min(Goodput((*first)[0]), Goodput((*first)[1]));
  const long shared_worst = std::min(Goodput((*shared)[0]), Goodput((*shared)[1]));
  std::printf("measured: goodput first-come %ld + %ld, shared %ld + %ld\n", Goodput((*first)[0]),
              Goodput((*first)[1]), Goodput((*shared)[0]), Goodput((*shared)[1]));
  EXPECT_GT(shared_worst, first_worst);
  EXPECT_GT(shared_worst, 0);
}

TEST(Tenancy, ARunIsTheSameForASeed) {
  Contention c;
  auto a = SimulateTogether(c.tenants, c.options, true);
  auto b = SimulateTogether(c.tenants, c.options, true);
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].Goodput(), (*b)[i].Goodput());
    EXPECT_EQ((*a)[i].pod_starts, (*b)[i].pod_starts);
  }
}

TEST(Tenancy, WhatCannotRunTogetherIsAClearError) {
  Contention c;
  Options no_nodes = c.options;
  no_nodes.nodes.clear();
  auto run = SimulateTogether(c.tenants, no_nodes, true);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().message, "pipelines that share a cluster need its nodes (--nodes)");
  c.tenants[1].pipeline["metadata"]["name"] = "one";
  run = SimulateTogether(c.tenants, c.options, true);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().message, "two pipelines are named default/one");
  c.tenants[1].pipeline["spec"]["paths"] = "no";
  run = SimulateTogether(c.tenants, c.options, true);
  ASSERT_FALSE(run.ok());
}

}  // namespace
}  // namespace pipescale::gym
