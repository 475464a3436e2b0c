// `pipescale profile --deployment` on the local cluster of real parts: a Deployment the
// controllers scale to a pod, which the node agent runs as pipescale's model server with a known
// d(b); the command finds the Ready pod through the apiserver and measures it there. A Deployment
// that does not exist is named with the one the operator would have created.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "integration/harness/cluster_test.h"
#include "integration/harness/local_env.h"
#include "integration/harness/loopback.h"
#include "integration/harness/node_pool.h"
#include "integration/harness/objects.h"
#include "integration/harness/wait.h"
#include "support/cli_run.h"

namespace pipescale {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::LocalEnv;
using namespace std::chrono_literals;

// The pod's d(b) = 0.2 b^2 + 5 b + 30 ms, and the pipeline that declares it.
constexpr const char* kPipeline = R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: chain}
spec:
  optimizer: fa2
  hardwareClasses:
    - {name: cpu, costPerHour: 0.1}
  tasks:
    - name: detect
      variants:
        - name: small
          batchSize: {max: 4}
          profiles:
            - {hardwareClass: cpu, latencyMs: {quadratic: {a: 0.2, b: 5, c: 30}}}
  paths:
    - {name: p, tasks: [detect], sloMs: 400}
)";

class ProfileDeploymentTest : public testing::ClusterTest {
 protected:
  void SetUp() override {
    testing::ClusterTest::SetUp();
    if (IsSkipped()) return;
    pool_ = std::make_unique<testing::NodePool>(
        ns_, json::array({{{"name", "n"}, {"capacity", {{"cpu", "8"}}}}}));
    ASSERT_TRUE(Eventually([&] { return pool_->ReadyNodes() == 1; }, 20s)) << pool_->Log();
    file_ = ::testing::TempDir() + "/profile-deployment-" + ns_ + ".yaml";
    std::ofstream(file_) << kPipeline;
  }

  // A Deployment of one model server that runs batches of 1 with the pipeline's d(b).
  void CreateDeployment(const std::string& name) {
    json spec = pool_->Admit(json::object());
    spec["containers"] =
        json::array({{{"name", "model"},
                      {"image", "pipescale/model-server:dev"},
                      {"env",
                       {{{"name", "PIPESCALE_TASK"}, {"value", "detect"}},
                        {{"name", "PIPESCALE_LATENCY_MS"}, {"value", "0.2,5,30"}},
                        {{"name", "MAX_BATCH_SIZE"}, {"value", "1"}}}},
                      {"ports", {{{"name", "http"}, {"containerPort", 8080}}}},
                      {"readinessProbe",
                       {{"httpGet", {{"path", "/v2/health/ready"}, {"port", "http"}}},
                        {"periodSeconds", 1}}}}});
    auto created = client_->Create("/apis/apps/v1/namespaces/" + ns_ + "/deployments",
                                   testing::PlainDeployment(name, 1, std::move(spec)));
    ASSERT_TRUE(created.ok()) << created.error().message;
  }

  bool DeploymentReady(const std::string& name) {
    auto d = client_->Get("/apis/apps/v1/namespaces/" + ns_ + "/deployments/" + name);
    return d.ok() && (*d)["status"].value("readyReplicas", 0) == 1;
  }

  testing::CliOutput Profile(const std::string& deployment) {
    const std::vector<std::string> args = {"profile",
                                           "-f",
                                           file_,
                                           "--task",
                                           "detect",
                                           "--variant",
                                           "small",
                                           "--hardware-class",
                                           "cpu",
                                           "--deployment",
                                           deployment,
                                           "-n",
                                           ns_,
                                           "--kubeconfig",
                                           LocalEnv::Get().Var("KUBECONFIG"),
                                           "--requests",
                                           "40",
                                           "--warmup",
                                           "3",
                                           "--progress",
                                           "none",
                                           "-o",
                                           "json"};
    return testing::RunCli(args);
  }

  std::unique_ptr<testing::NodePool> pool_;
  std::string file_;
};

TEST_F(ProfileDeploymentTest, MeasuresAReadyPodOfTheDeployment) {
  CreateDeployment("detect");
  ASSERT_TRUE(Eventually([&] { return DeploymentReady("detect"); }, 60s)) << pool_->Log();
  const testing::CliOutput r = Profile("detect");
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  const json report = json::parse(r.out);
  EXPECT_EQ(report["pod"].get<std::string>().rfind("detect-", 0), 0u) << report["pod"];
  EXPECT_EQ(report["address"].get<std::string>().rfind("127.", 0), 0u) << report["address"];
  ASSERT_EQ(report["batches"].size(), 4u) << r.out;
  for (const json& b : report["batches"]) {
    const int n = b["batch"];
    const double want = 0.2 * n * n + 5 * n + 30;
    // The mean includes the call's own overhead, which only adds (CI measured +2.1 ms on 35.2),
    // and the stalls of a loaded machine, so the bound above is on the median (CI: one stall of
    // 72 ms once; another run two past 100 ms moved the mean without the slowest to 46.1 ms on
    // 40.8, the median 41.9).
    const double mean = b["meanMs"], median = b["p50Ms"];
    EXPECT_GE(mean, 0.95 * want) << b.dump();
    EXPECT_LE(median, 1.05 * want + testing::kCallOverheadMs) << b.dump();
  }
}

TEST_F(ProfileDeploymentTest, ADeploymentNotFoundIsNamedWithTheOperatorsName) {
  const testing::CliOutput r = Profile("detector");
  EXPECT_EQ(r.code, cli::kExitFailure);
  EXPECT_NE(r.err.find("deployment \"detector\" in namespace \"" + ns_ + "\": "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("\"chain-detect-small-cpu\""), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pipescale
