// The kube client against a real kube-apiserver + etcd: TLS verification, CRUD, optimistic
// concurrency, the status subresource, watches, both forms of 410 Gone, and API discovery.
#include "kube/client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "common/guard.h"
#include "integration/harness/local_env.h"
#include "kube/discovery.h"
#include "support/pipelines.h"

namespace pipescale::kube {
namespace {

using testing::LocalEnv;

nlohmann::json ConfigMap(const std::string& name, const std::string& value) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}}},
          {"data", {{"value", value}}}};
}

TEST(KubeClient, VerifiesTheServerCertificate) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  const Client client(LocalEnv::Get().Config());
  auto version = client.Get("/version");
  ASSERT_TRUE(version.ok()) << version.error().message;
  EXPECT_EQ((*version)["gitVersion"], "v1.20.2");

  // The same server with the system CA store instead of ours: the handshake must fail.
  ClusterConfig untrusted = LocalEnv::Get().Config();
  untrusted.ca_pem.clear();
  auto refused = Client(untrusted).Get("/version");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kTransient);
  EXPECT_NE(refused.error().message.find("certificate"), std::string::npos)
      << refused.error().message;
}

// The 1.20 apiserver serves PodDisruptionBudgets at policy/v1beta1 only (v1 came in 1.21): the
// first version of a list it serves, a group it serves not at all, and an apiserver that cannot
// be asked.
TEST(KubeDiscovery, FirstServedVersionAsTheApiserverListsThem) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  const Client client(LocalEnv::Get().Config());
  EXPECT_EQ(FirstServedVersion(client, {"policy/v1", "policy/v1beta1"}), "policy/v1beta1");
  EXPECT_EQ(FirstServedVersion(client, {"apps/v1", "apps/v1beta2"}), "apps/v1");
  EXPECT_EQ(FirstServedVersion(client, {"nothing.example.com/v1"}), std::nullopt);
  ClusterConfig wrong = LocalEnv::Get().Config();
  wrong.token = "not-the-token";
  EXPECT_EQ(FirstServedVersion(Client(wrong), {"policy/v1", "policy/v1beta1"}), "policy/v1");
}

TEST(KubeClient, RejectsAWrongToken) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  ClusterConfig config = LocalEnv::Get().Config();
  config.token = "not-the-token";
  auto r = Client(config).Get("/api/v1/namespaces");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("HTTP 401"), std::string::npos) << r.error().message;
}

TEST(KubeClient, CreateGetPatchConflictDelete) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  const Client client(LocalEnv::Get().Config());
  const std::string ns = LocalEnv::Get().FreshNamespace(client);
  const std::string collection = CollectionPath(kConfigMaps, ns);
  const std::string path = ObjectPath(kConfigMaps, ns, "settings");

  auto created = client.Create(collection, ConfigMap("settings", "1"));
  ASSERT_TRUE(created.ok()) << created.error().message;
  auto again = client.Create(collection, ConfigMap("settings", "1"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().kind, ErrorKind::kConflict);  // AlreadyExists is a 409

  auto patched = client.MergePatch(path, {{"data", {{"value", "2"}}}});
  ASSERT_TRUE(patched.ok()) << patched.error().message;
  EXPECT_EQ((*patched)["data"]["value"], "2");

  // An update that carries the resourceVersion from before the patch loses: 409.
  nlohmann::json stale = *created;
  stale["data"]["value"] = "3";
  auto conflict = client.Update(path, stale);
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.error().kind, ErrorKind::kConflict);
  EXPECT_NE(conflict.error().message.find("HTTP 409"), std::string::npos);

  ASSERT_TRUE(client.Delete(path).ok());
  auto gone = client.Get(path);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().kind, ErrorKind::kNotFound);
}

TEST(KubeClient, StatusSubresourceLeavesGenerationAlone) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  const Client client(LocalEnv::Get().Config());
  const std::string ns = LocalEnv::Get().FreshNamespace(client);
  const ResourceType pipelines{"pipescale.io/v1alpha1", "inferencepipelines", true};
  const nlohmann::json ipl = testing::OneTaskPipeline("p");
  auto created = client.Create(CollectionPath(pipelines, ns), ipl);
  ASSERT_TRUE(created.ok()) << created.error().message;
  const int generation = (*created)["metadata"]["generation"];

  auto status = client.MergePatch(ObjectPath(pipelines, ns, "p", "status"),
                                  {{"status", {{"observedGeneration", generation}}}});
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ((*status)["status"]["observedGeneration"], generation);
  EXPECT_EQ((*status)["metadata"]["generation"], generation);

  auto spec =
      client.MergePatch(ObjectPath(pipelines, ns, "p"), {{"spec", {{"mode", "Recommend"}}}});
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ((*spec)["metadata"]["generation"], generation + 1);

  // The schema rejects what it can see is wrong.
  auto invalid = client.MergePatch(ObjectPath(pipelines, ns, "p"), {{"spec", {{"mode", "Auto"}}}});
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.error().kind, ErrorKind::kInvalid);
}

TEST(KubeClient, WatchStreamsEventsUntilStopped) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  const Client client(LocalEnv::Get().Config());
  const std::string ns = LocalEnv::Get().FreshNamespace(client);
  auto list = client.Get(CollectionPath(kConfigMaps, ns));
  ASSERT_TRUE(list.ok());
  const std::string rv = (*list)["metadata"]["resourceVersion"];

  std::vector<std::string> seen;
  std::atomic<bool> stop{false};
  std::thread watcher([&] {
    const Status s = client.Watch(
        CollectionPath(kConfigMaps, ns) + "?watch=1&resourceVersion=" + rv,
        [&](const WatchEvent& e) {
          seen.push_back(e.type + " " + e.object["metadata"].value("name", ""));
          return seen.size() < 3;
        },
        stop);
    EXPECT_TRUE(s.ok()) << s.error().message;
  });
  ASSERT_TRUE(client.Create(CollectionPath(kConfigMaps, ns), ConfigMap("w", "1")).ok());
  ASSERT_TRUE(
      client.MergePatch(ObjectPath(kConfigMaps, ns, "w"), {{"data", {{"value", "2"}}}}).ok());
  ASSERT_TRUE(client.Delete(ObjectPath(kConfigMaps, ns, "w")).ok());
  watcher.join();
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED w", "MODIFIED w", "DELETED w"}));

  // An idle watch ends promptly when asked to.
  stop = true;
  const auto start = std::chrono::steady_clock::now();
  const Status idle = client.Watch(
      CollectionPath(kConfigMaps, ns) + "?watch=1", [](const WatchEvent&) { return true; }, stop);
  EXPECT_TRUE(idle.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

// A throw from the event handler must not unwind through libcurl's C frames: the watch ends
// with an error saying so, counted, and the client works on.
TEST(KubeClient, AThrowingWatchHandlerEndsTheWatchWithAnError) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  const Client client(LocalEnv::Get().Config());
  const std::string ns = LocalEnv::Get().FreshNamespace(client);
  ASSERT_TRUE(client.Create(CollectionPath(kConfigMaps, ns), ConfigMap("w", "1")).ok());
  const auto before = PanicCounts()["kube-watch"];
  std::atomic<bool> stop{false};
  const Status s = client.Watch(
      CollectionPath(kConfigMaps, ns) + "?watch=1",
      [](const WatchEvent&) -> bool { throw std::out_of_range("no such field"); }, stop);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("the event handler threw: no such field"), std::string::npos)
      << s.error().message;
  EXPECT_EQ(PanicCounts()["kube-watch"], before + 1);
  EXPECT_TRUE(client.Get(ObjectPath(kConfigMaps, ns, "w")).ok());
}

TEST(KubeClient, ExpiredVersionsAre410BothWays) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  const Client client(LocalEnv::Get().Config());
  const std::string ns = LocalEnv::Get().FreshNamespace(client);
  auto created = client.Create(CollectionPath(kConfigMaps, ns), ConfigMap("old", "1"));
  ASSERT_TRUE(created.ok());
  const std::string old_rv = (*created)["metadata"]["resourceVersion"];
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client
                    .MergePatch(ObjectPath(kConfigMaps, ns, "old"),
                                {{"data", {{"value", std::to_string(i)}}}})
                    .ok());
  }
  LocalEnv::Get().CompactEtcd();

  // A list at that exact version: HTTP 410.
  auto list = client.Get(CollectionPath(kConfigMaps, ns) + "?resourceVersion=" + old_rv +
                         "&resourceVersionMatch=Exact");
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.error().kind, ErrorKind::kExpired);

  // A watch from it: HTTP 200 with an ERROR event carrying code 410.
  int code = 0;
  std::atomic<bool> stop{false};
  const Status s = client.Watch(
      CollectionPath(kConfigMaps, ns) + "?watch=1&resourceVersion=" + old_rv,
      [&](const WatchEvent& e) {
        if (e.type == "ERROR") code = e.object.value("code", 0);
        return false;
      },
      stop);
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(code, 410);
}

}  // namespace
}  // namespace pipescale::kube
