// The node agent plays the kubelet for real Pods on the local cluster: what a kubelet would
// report for an image it cannot pull, a service-account token with exactly its Role's rights,
// readiness from the pod's own probe, and stops within the grace period.
#include <gtest/gtest.h>

#include <chrono>

#include "integration/harness/cluster_test.h"
#include "integration/harness/local_env.h"
#include "integration/harness/node_pool.h"
#include "integration/harness/wait.h"
#include "kube/client.h"

namespace pipescale {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::LocalEnv;
using namespace std::chrono_literals;

class NodeAgentTest : public testing::ClusterTest {
 protected:
  void StartPool(const std::map<std::string, std::string>& images = {}) {
    pool_ = std::make_unique<testing::NodePool>(
        ns_, json::array({{{"name", "n"}, {"capacity", {{"cpu", "8"}}}}}), images);
    ASSERT_TRUE(Eventually([&] { return pool_->ReadyNodes() == 1; }, 20s)) << pool_->Log();
    // The service-account admission refuses a pod (HTTP 500) until the token controller has given
    // the new namespace's default service account its token Secret: on a loaded machine, seconds.
    ASSERT_TRUE(Eventually(
        [&] {
          auto sa = client_->Get("/api/v1/namespaces/" + ns_ + "/serviceaccounts/default");
          return sa.ok() && !(*sa).value("secrets", json::array()).empty();
        },
        30s));
  }

  // A pod on the pool running `container`.
  void CreatePod(const std::string& name, json container, json spec = json::object()) {
    spec.update(pool_->Admit(json::object()));
    spec["containers"] = json::array({container});
    auto created = client_->Create(
        kube::CollectionPath(kube::kPods, ns_),
        {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", name}}}, {"spec", spec}});
    ASSERT_TRUE(created.ok()) << created.error().message;
  }

  json Pod(const std::string& name) {
    auto pod = client_->Get(kube::ObjectPath(kube::kPods, ns_, name));
    return pod.ok() ? *pod : json{{"status", json::object()}};
  }

  bool Ready(const std::string& name) {
    for (const json& c : Pod(name)["status"].value("conditions", json::array())) {
      if (c["type"] == "Ready") return c["status"] == "True";
    }
    return false;
  }

  std::unique_ptr<testing::NodePool> pool_;
};

TEST_F(NodeAgentTest, AnImageItDoesNotKnowCannotBePulled) {
  StartPool();
  CreatePod("unknown", {{"name", "app"}, {"image", "example.com/nowhere:1"}});
  ASSERT_TRUE(Eventually(
      [&] {
        const json s = Pod("unknown")["status"];
        const std::string reason = s.value("containerStatuses", json::array({json::object()}))[0]
                                       .value("state", json::object())
                                       .value("waiting", json::object())
                                       .value("reason", "");
        return s.value("phase", "") == "Pending" &&
               (reason == "ErrImagePull" || reason == "ImagePullBackOff");
      },
      20s))
      << Pod("unknown").dump() << pool_->Log();
  auto events = client_->Get("/api/v1/namespaces/" + ns_ + "/events?fieldSelector=" +
                             kube::QueryEscape("involvedObject.name=unknown,reason=Failed"));
  ASSERT_TRUE(events.ok());
  // Two Failed events, as from a kubelet, in no particular order: the pull and the error.
  std::string messages;
  for (const json& e : (*events)["items"]) messages += e.value("message", "") + "\n";
  EXPECT_NE(messages.find("Failed to pull image \"example.com/nowhere:1\""), std::string::npos)
      << messages;
  EXPECT_NE(messages.find("Error: ErrImagePull"), std::string::npos) << messages;
}

// kubectl run in the pod finds the token, CA and namespace at the in-cluster path; the
// apiserver (RBAC) grants the default service account nothing until a Role does.
TEST_F(NodeAgentTest, APodsTokenHasExactlyTheRightsOfItsRole) {
  StartPool({{"bitnami/kubectl", "/usr/bin/kubectl"}});
  const json can_i = {{"name", "kubectl"},
                      {"image", "bitnami/kubectl:1.32"},
                      {"args", {"auth", "can-i", "list", "pods"}}};
  CreatePod("before", can_i, {{"restartPolicy", "Never"}});
  ASSERT_TRUE(
      Eventually([&] { return Pod("before")["status"].value("phase", "") == "Failed"; }, 30s))
      << Pod("before").dump() << pool_->Log();
  EXPECT_NE(pool_->ContainerLog(ns_, "before", "kubectl").find("no"), std::string::npos)
      << pool_->ContainerLog(ns_, "before", "kubectl");

  ASSERT_TRUE(
      client_
          ->Create(
              "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns_ + "/roles",
              {{"metadata", {{"name", "list-pods"}}},
               {"rules", {{{"apiGroups", {""}}, {"resources", {"pods"}}, {"verbs", {"list"}}}}}})
          .ok());
  ASSERT_TRUE(client_
                  ->Create("/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns_ + "/rolebindings",
                           {{"metadata", {{"name", "list-pods"}}},
                            {"roleRef",
                             {{"apiGroup", "rbac.authorization.k8s.io"},
                              {"kind", "Role"},
                              {"name", "list-pods"}}},
                            {"subjects", {{{"kind", "ServiceAccount"}, {"name", "default"}}}}})
                  .ok());
  CreatePod("after", can_i, {{"restartPolicy", "Never"}});
  ASSERT_TRUE(
      Eventually([&] { return Pod("after")["status"].value("phase", "") == "Succeeded"; }, 30s))
      << Pod("after").dump() << pool_->ContainerLog(ns_, "after", "kubectl");
  EXPECT_NE(pool_->ContainerLog(ns_, "after", "kubectl").find("yes"), std::string::npos);
}

// The model server answers not-ready until its start-up delay has passed; the pod is Ready
// only then, through its own readiness probe.
TEST_F(NodeAgentTest, ReadinessComesFromThePodsProbe) {
  StartPool();
  CreatePod(
      "model",
      {{"name", "model"},
       {"image", "pipescale/model-server:dev"},
       {"env", {{{"name", "PIPESCALE_STARTUP_SECONDS"}, {"value", "3"}}}},
       {"ports", {{{"name", "http"}, {"containerPort", 8080}}}},
       {"readinessProbe",
        {{"httpGet", {{"path", "/v2/health/ready"}, {"port", "http"}}}, {"periodSeconds", 1}}}});
  ASSERT_TRUE(Eventually([&] { return Pod("model")["status"].value("phase", "") == "Running"; }));
  const auto running = std::chrono::steady_clock::now();
  EXPECT_FALSE(Ready("model"));
  ASSERT_TRUE(Eventually([&] { return Ready("model"); }, 15s)) << Pod("model").dump();
  EXPECT_GE(std::chrono::steady_clock::now() - running, 1500ms);
  EXPECT_NE(Pod("model")["status"].value("podIP", "").rfind("127.", 0), std::string::npos);
}

// A process that ignores SIGTERM is killed when the pod's grace period ends, and the pod is
// then gone (a kubelet's final delete), not Terminating for ever.
TEST_F(NodeAgentTest, AStoppedPodIsKilledAtTheEndOfItsGracePeriod) {
  StartPool({{"busybox", "/bin/sh"}});
  CreatePod("stubborn",
            {{"name", "sh"}, {"image", "busybox"}, {"args", {"-c", "trap '' TERM; sleep 600"}}},
            {{"terminationGracePeriodSeconds", 3}});
  ASSERT_TRUE(
      Eventually([&] { return Pod("stubborn")["status"].value("phase", "") == "Running"; }));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(client_->Delete(kube::ObjectPath(kube::kPods, ns_, "stubborn")).ok());
  ASSERT_TRUE(Eventually(
      [&] { return !client_->Get(kube::ObjectPath(kube::kPods, ns_, "stubborn")).ok(); }, 20s));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 2500ms);  // it was given its grace period
  EXPECT_LT(took, 10s);     // and no more
}

}  // namespace
}  // namespace pipescale
