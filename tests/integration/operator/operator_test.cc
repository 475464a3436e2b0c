// The pipescale-operator process against the local cluster: it follows a load step up and
// down within a few intervals, serves health, readiness and metrics, hands leadership over
// through the Lease, and stops cleanly on SIGTERM.
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "api/deployment.h"
#include "integration/harness/load.h"
#include "integration/harness/local_env.h"
#include "integration/harness/process.h"
#include "integration/harness/wait.h"
#include "kube/client.h"
#include "reconciler/conditions.h"
#include "reconciler/reconciler.h"

namespace pipescale {
namespace {

using testing::Eventually;

using nlohmann::json;
using testing::LocalEnv;
using testing::Process;
using namespace std::chrono_literals;

json Pipeline() {
  auto variant = [](const char* v, double c) {
    const json profile = {{"hardwareClass", "cpu"},
                          {"latencyMs", {{"quadratic", {{"a", 0}, {"b", 10}, {"c", c}}}}}};
    return json{{"name", v}, {"batchSize", {{"max", 16}}}, {"profiles", json::array({profile})}};
  };
  return {
      {"apiVersion", "pipescale.io/v1alpha1"},
      {"kind", "InferencePipeline"},
      {"metadata", {{"name", "shop"}}},
      {"spec",
       {{"interval", "2s"},
        {"hardwareClasses", json::array({{{"name", "cpu"}, {"costPerHour", 0.1}}})},
        {"tasks",
         json::array({{{"name", "detect"},
                       {"next", json::array({{{"task", "classify"}}})},
                       {"variants", json::array({variant("small", 20)})}},
                      {{"name", "classify"}, {"variants", json::array({variant("tiny", 10)})}}})},
        {"paths",
         json::array({{{"name", "p"}, {"tasks", {"detect", "classify"}}, {"sloMs", 500}}})},
        {"behavior", {{"scaleDown", {{"stabilizationWindowSeconds", 0}}}}},
        {"metrics",
         {{"prometheusURL", LocalEnv::Get().Var("PIPESCALE_PROMETHEUS")},
          {"pathRate", testing::kFastRateQuery}}}}}};
}

class OperatorProcess {
 public:
  OperatorProcess(const std::string& ns, const std::string& name)
      : metrics_port_(testing::FreePort()), health_port_(testing::FreePort()) {
    process_ = std::make_unique<Process>(
        std::vector<std::string>{
            PIPESCALE_OPERATOR, "--kubeconfig", LocalEnv::Get().Var("KUBECONFIG"), "--namespace",
            ns, "--leader-elect", "--leader-election-namespace", ns, "--metrics-bind-address",
            "127.0.0.1:" + std::to_string(metrics_port_), "--health-probe-bind-address",
            "127.0.0.1:" + std::to_string(health_port_), "--log-format", "json"},
        ::testing::TempDir() + "/" + name + ".log");
  }
  int Ready() const { return testing::HttpGet(health_port_, "/readyz").first; }
  int Healthy() const { return testing::HttpGet(health_port_, "/healthz").first; }
  std::string Metrics() const { return testing::HttpGet(metrics_port_, "/metrics").second; }
  Process& process() { return *process_; }

 private:
  int metrics_port_;
  int health_port_;
  std::unique_ptr<Process> process_;
};

class OperatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!LocalEnv::Available()) GTEST_SKIP() << "needs the local cluster (ctest fixture local_env)";
    client_ = std::make_unique<kube::Client>(LocalEnv::Get().Config());
    ns_ = LocalEnv::Get().FreshNamespace(*client_);
  }

  json Status() {
    auto o = client_->Get(kube::ObjectPath(reconciler::kInferencePipelines, ns_, "shop"));
    return o.ok() ? o->value("status", json::object()) : json::object();
  }

  // True when every Deployment matches the plan in status and the measured rate is near `rps`.
  bool FollowsPlanAt(double rps) {
    const json status = Status();
    if (!status.contains("plan")) return false;
    const double measured = status["observed"]["pathRates"].value("p", -1.0);
    if (std::abs(measured - rps) > 0.25 * rps) return false;
    for (const auto& t : status["plan"]["tasks"]) {
      auto d = client_->Get(kube::ObjectPath(kube::kDeployments, ns_, t["deployment"]));
      if (!d.ok()) return false;
      const auto f = api::ReadManagedFields(*d, "MAX_BATCH_SIZE");
      if (f.replicas != t["replicas"].get<int>() || f.batch_size != t["batchSize"].get<int>()) {
        return false;
      }
    }
    return true;
  }

  std::unique_ptr<kube::Client> client_;
  std::string ns_;
};

TEST_F(OperatorTest, FollowsALoadStepAndStopsCleanly) {
  testing::Load load(ns_, "shop", {{"p", 30}});
  OperatorProcess op(ns_, "operator");
  ASSERT_TRUE(Eventually([&] { return op.Ready() == 200; }, 20s)) << op.process().Log();
  EXPECT_EQ(op.Healthy(), 200);
  ASSERT_TRUE(
      client_->Create(kube::CollectionPath(reconciler::kInferencePipelines, ns_), Pipeline()).ok());

  // Metrics need ~10 s to appear the first time (target discovery, rate window); after that,
  // each load step must show in the Deployments within the metrics lag plus two intervals.
  ASSERT_TRUE(Eventually([&] { return FollowsPlanAt(30); }, 40s)) << Status().dump();
  const int low = Status()["totalReplicas"];
  EXPECT_EQ(reconciler::ConditionStatus(Status()["conditions"], "Ready"), "True");

  load.SetRate("p", 300);
  ASSERT_TRUE(Eventually([&] { return FollowsPlanAt(300); }, 5s + 6s + 4s)) << Status().dump();
  const int high = Status()["totalReplicas"];
  EXPECT_GT(high, low);

  load.SetRate("p", 30);
  ASSERT_TRUE(Eventually([&] { return FollowsPlanAt(30); }, 5s + 6s + 4s)) << Status().dump();
  EXPECT_LT(Status()["totalReplicas"].get<int>(), high);

  const std::string metrics = op.Metrics();
  EXPECT_NE(metrics.find("controller_runtime_reconcile_total{controller=\"inferencepipeline\""),
            std::string::npos);
  EXPECT_NE(metrics.find("pipescale_desired_replicas{"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("pipescale_predicted_latency_ms{"), std::string::npos);

  EXPECT_EQ(op.process().Stop(SIGTERM, 10s), 0) << op.process().Log();
  auto lease = client_->Get(kube::ObjectPath(kube::kLeases, ns_, "pipescale-operator"));
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)["spec"].value("holderIdentity", "x"), "");  // released on the way out
}

TEST_F(OperatorTest, OneLeaderAtATime) {
  OperatorProcess first(ns_, "first");
  ASSERT_TRUE(Eventually([&] { return first.Ready() == 200; }, 20s)) << first.process().Log();
  OperatorProcess second(ns_, "second");
  ASSERT_TRUE(Eventually([&] { return second.Healthy() == 200; }, 20s));
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(second.Ready(), 503);  // alive, waiting for the Lease
  EXPECT_EQ(first.process().Stop(SIGTERM, 10s), 0);
  EXPECT_TRUE(Eventually([&] { return second.Ready() == 200; }, 15s)) << second.process().Log();
  EXPECT_EQ(second.process().Stop(SIGTERM, 10s), 0);
}

TEST(OperatorFlags, BadFlagsExitTwo) {
  Process p({PIPESCALE_OPERATOR, "--log-format", "xml"}, ::testing::TempDir() + "/flags.log");
  EXPECT_EQ(p.Stop(0, 5s), 2);
  EXPECT_NE(p.Log().find("--log-format: must be text or json"), std::string::npos) << p.Log();
}

}  // namespace
}  // namespace pipescale
