// The operator as the chart installs it by default: no --namespace, so each of its watches
// (InferencePipelines, Deployments, the ConfigMaps it writes) covers every namespace at once.
// Every other test confines its operator to its own namespaces, so that tests run beside each
// other; this one runs alone (RUN_SERIAL, tests/CMakeLists.txt), as its operator would
// reconcile their pipelines and they would see its writes. It leaves no namespace behind.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/deployment_view.h"
#include "integration/harness/cluster_test.h"
#include "integration/harness/load.h"
#include "integration/harness/local_env.h"
#include "integration/harness/wait.h"
#include "integration/operator/operator_process.h"
#include "kube/client.h"
#include "reconciler/reconciler.h"
#include "support/pipelines.h"

namespace pipescale {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::LocalEnv;
using namespace std::chrono_literals;

class AllNamespacesTest : public testing::ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    if (IsSkipped()) return;
    namespaces_ = {ns_, ns_.substr(0, 44) + "-other"};
    // The second namespace's name is this test's too: one left by an earlier run goes first.
    const std::string path = "/api/v1/namespaces/" + namespaces_[1];
    (void)client_->Delete(path);
    ASSERT_TRUE(Eventually(
        [&] {
          return client_
              ->Create("/api/v1/namespaces", {{"apiVersion", "v1"},
                                              {"kind", "Namespace"},
                                              {"metadata", {{"name", namespaces_[1]}}}})
              .ok();
        },
        120s, 500ms));
  }

  // The namespaces go, and the test waits until they are gone: the cluster is left as found.
  void TearDown() override {
    if (!client_) return;  // skipped
    for (const std::string& ns : namespaces_) (void)client_->Delete("/api/v1/namespaces/" + ns);
    for (const std::string& ns : namespaces_) {
      EXPECT_TRUE(
          Eventually([&] { return !client_->Get("/api/v1/namespaces/" + ns).ok(); }, 120s, 500ms))
          << ns << " is still being deleted";
    }
  }

  json Status(const std::string& ns) const {
    auto o = client_->Get(kube::ObjectPath(reconciler::kInferencePipelines, ns, "shop"));
    return o.ok() ? o->value("status", json::object()) : json::object();
  }

  // The replicas the Deployment `name` in `ns` asks for, -1 when it does not exist.
  int Replicas(const std::string& ns, const std::string& name) const {
    auto d = client_->Get(kube::ObjectPath(kube::kDeployments, ns, name));
    return d.ok() ? api::ReadManagedFields(api::ReadDeployment(*d), "MAX_BATCH_SIZE")
                        .replicas.value_or(-1)
                  : -1;
  }

  // The pipeline's plan is in its Deployments, and its routing tables in its ConfigMap.
  bool Applied(const std::string& ns) const {
    const json status = Status(ns);
    if (!status.contains("plan") || status["plan"]["tasks"].empty()) return false;
    for (const json& t : status["plan"]["tasks"]) {
      if (Replicas(ns, t["deployment"]) != t["replicas"].get<int>()) return false;
    }
    auto routing = client_->Get(kube::ObjectPath(kube::kConfigMaps, ns, "shop-routing"));
    return routing.ok() && (*routing)["data"].contains("routing.json");
  }

  std::vector<std::string> namespaces_;
};

// "shop" in two namespaces, planned by Loki (whose routing tables go in a ConfigMap): each gets
// its Deployments and tables; a hand edit of a Deployment in either is put back; a deleted
// ConfigMap comes back. All through watches of every namespace at once.
TEST_F(AllNamespacesTest, OneOperatorServesPipelinesInEveryNamespace) {
  std::vector<std::unique_ptr<testing::Load>> loads;
  for (const std::string& ns : namespaces_) {
    loads.push_back(
        std::make_unique<testing::Load>(ns, "shop", std::map<std::string, double>{{"p", 30}}));
    json pipeline =
        testing::ShopPipelineOnCluster("shop", LocalEnv::Get().Var("PIPESCALE_PROMETHEUS"));
    pipeline["spec"]["optimizer"] = "loki";
    ASSERT_TRUE(
        client_->Create(kube::CollectionPath(reconciler::kInferencePipelines, ns), pipeline).ok());
  }
  const auto op = OperatorProcess::WithFlags("all-namespaces", {});
  ASSERT_TRUE(Eventually([&] { return op->Serving(); }, 20s)) << op->process().Log();
  EXPECT_NE(op->process().Log().find(R"("namespaces":"*")"), std::string::npos)
      << "it watches every namespace: " << op->process().Log();

  // Metrics need ~10 s to appear the first time (target discovery, the 5 s rate window).
  for (const std::string& ns : namespaces_) {
    EXPECT_TRUE(Eventually([&] { return Applied(ns); }, 40s)) << ns << ": " << Status(ns).dump();
  }

  // A hand edit of a Deployment, in each namespace: put back.
  for (const std::string& ns : namespaces_) {
    const std::string detect = "shop-detect-small-cpu";
    const int planned = Replicas(ns, detect);
    ASSERT_GT(planned, 0) << ns;
    ASSERT_TRUE(client_
                    ->MergePatch(kube::ObjectPath(kube::kDeployments, ns, detect),
                                 {{"spec", {{"replicas", planned + 3}}}})
                    .ok());
    // Put back to what the plan in the status says, which may have moved since the read above
    // (the load's rate is still settling): not to the count read once.
    EXPECT_TRUE(Eventually([&] { return Replicas(ns, detect) != planned + 3 && Applied(ns); }, 20s))
        << ns << ": " << Replicas(ns, detect) << " replicas, plan " << Status(ns)["plan"].dump();
  }

  // The second pipeline's ConfigMap deleted: it comes back.
  const std::string routing = kube::ObjectPath(kube::kConfigMaps, namespaces_[1], "shop-routing");
  auto before = client_->Get(routing);
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(client_->Delete(routing).ok());
  EXPECT_TRUE(Eventually(
      [&] {
        auto now = client_->Get(routing);
        return now.ok() && (*now)["metadata"]["uid"] != (*before)["metadata"]["uid"] &&
               (*now)["data"].contains("routing.json");
      },
      20s))
      << op->process().Log();

  EXPECT_EQ(op->process().Stop(SIGTERM, 10s), 0) << op->process().Log();
}

}  // namespace
}  // namespace pipescale
