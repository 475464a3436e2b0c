// The informer against a real kube-apiserver: it fills its cache, follows changes, relists
// when its version expires inside a watch stream, and resumes after the apiserver restarts.
#include "kube/informer.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>

#include "common/guard.h"
#include "integration/harness/local_env.h"
#include "integration/harness/wait.h"

namespace pipescale::kube {
namespace {

using testing::Eventually;

using testing::LocalEnv;
using namespace std::chrono_literals;

nlohmann::json ConfigMap(const std::string& name, const std::string& value) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"labels", {{"app", "test"}}}}},
          {"data", {{"value", value}}}};
}

// Collects the keys the informer reports and waits for a condition on its cache.
class Recorder {
 public:
  Informer::Handler Handler() {
    return [this](const std::string& key, const nlohmann::json&) {
      std::lock_guard lock(mu_);
      keys_.insert(key);
    };
  }
  bool Saw(const std::string& key) {
    std::lock_guard lock(mu_);
    return keys_.contains(key);
  }

 private:
  std::mutex mu_;
  std::set<std::string> keys_;
};

std::string Value(const Informer& informer, const std::string& key) {
  auto object = informer.Get(key);
  return object ? (*object)["data"].value("value", "") : "";
}

TEST(Informer, ListsThenFollowsChangesWithASelector) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  const Client client(LocalEnv::Get().Config());
  const std::string ns = LocalEnv::Get().FreshNamespace(client);
  ASSERT_TRUE(client.Create(CollectionPath(kConfigMaps, ns), ConfigMap("before", "1")).ok());
  auto unlabeled = ConfigMap("other", "1");
  unlabeled["metadata"].erase("labels");
  ASSERT_TRUE(client.Create(CollectionPath(kConfigMaps, ns), unlabeled).ok());

  Recorder recorder;
  Informer informer(client,
                    {.type = kConfigMaps, .namespace_name = ns, .label_selector = "app=test"},
                    recorder.Handler());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(10s));
  EXPECT_EQ(Value(informer, ns + "/before"), "1");
  EXPECT_FALSE(informer.Get(ns + "/other").has_value());

  ASSERT_TRUE(client.Create(CollectionPath(kConfigMaps, ns), ConfigMap("after", "1")).ok());
  ASSERT_TRUE(
      client.MergePatch(ObjectPath(kConfigMaps, ns, "before"), {{"data", {{"value", "2"}}}}).ok());
  EXPECT_TRUE(Eventually([&] { return Value(informer, ns + "/before") == "2"; }));
  EXPECT_TRUE(Eventually([&] { return informer.Get(ns + "/after").has_value(); }));
  EXPECT_TRUE(Eventually([&] { return recorder.Saw(ns + "/after"); }));

  ASSERT_TRUE(client.Delete(ObjectPath(kConfigMaps, ns, "after")).ok());
  EXPECT_TRUE(Eventually([&] { return !informer.Get(ns + "/after").has_value(); }));
  EXPECT_EQ(informer.relists(), 1);
  informer.Stop();
}

// The names of the objects an index files under `value`.
std::set<std::string> Indexed(const Informer& informer, const std::string& value) {
  std::set<std::string> out;
  for (const auto& o : informer.ByIndex("value", value)) out.insert(o["metadata"]["name"]);
  return out;
}

// An index follows every change: an object is found under its value once added, under its new
// value only once changed, and nowhere once deleted.
TEST(Informer, AnIndexFollowsAddsChangesAndDeletes) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  const Client client(LocalEnv::Get().Config());
  const std::string ns = LocalEnv::Get().FreshNamespace(client);
  ASSERT_TRUE(client.Create(CollectionPath(kConfigMaps, ns), ConfigMap("a", "x")).ok());
  Informer informer(
      client,
      {.type = kConfigMaps,
       .namespace_name = ns,
       .label_selector = "app=test",
       .indexes = {{"value",
                    [](const nlohmann::json& o) {
                      return o.value("data", nlohmann::json::object()).value("value", "");
                    }}}},
      [](const std::string&, const nlohmann::json&) {});
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(10s));
  EXPECT_EQ(Indexed(informer, "x"), (std::set<std::string>{"a"}));
  ASSERT_TRUE(client.Create(CollectionPath(kConfigMaps, ns), ConfigMap("b", "x")).ok());
  ASSERT_TRUE(client.Create(CollectionPath(kConfigMaps, ns), ConfigMap("c", "y")).ok());
  EXPECT_TRUE(Eventually([&] { return Indexed(informer, "x").size() == 2; }));
  ASSERT_TRUE(
      client.MergePatch(ObjectPath(kConfigMaps, ns, "a"), {{"data", {{"value", "y"}}}}).ok());
  EXPECT_TRUE(Eventually([&] { return Indexed(informer, "y").size() == 2; }));
  EXPECT_EQ(Indexed(informer, "x"), (std::set<std::string>{"b"}));
  ASSERT_TRUE(client.Delete(ObjectPath(kConfigMaps, ns, "c")).ok());
  EXPECT_TRUE(Eventually([&] { return Indexed(informer, "y").size() == 1; }));
  EXPECT_EQ(Indexed(informer, "y"), (std::set<std::string>{"a"}));
  EXPECT_TRUE(informer.ByIndex("value", "z").empty());
  EXPECT_TRUE(informer.ByIndex("no such index", "x").empty());
  EXPECT_TRUE(informer.Contains(ns + "/a"));
  EXPECT_FALSE(informer.Contains(ns + "/c"));
  informer.Stop();
}

TEST(Informer, RelistsWhenItsVersionExpiresInsideTheStream) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  const Client client(LocalEnv::Get().Config());
  const std::string ns = LocalEnv::Get().FreshNamespace(client);
  auto created = client.Create(CollectionPath(kConfigMaps, ns), ConfigMap("a", "1"));
  ASSERT_TRUE(created.ok());
  const std::string old_rv = (*created)["metadata"]["resourceVersion"];
  ASSERT_TRUE(client.Create(CollectionPath(kConfigMaps, ns), ConfigMap("b", "1")).ok());
  ASSERT_TRUE(
      client.MergePatch(ObjectPath(kConfigMaps, ns, "a"), {{"data", {{"value", "2"}}}}).ok());
  LocalEnv::Get().CompactEtcd();

  // Resuming from a compacted version, as after a long disconnect: the server answers with an
  // ERROR event (code 410) in a 200 stream; the informer must relist and lose nothing.
  Recorder recorder;
  Informer informer(client, {.type = kConfigMaps, .namespace_name = ns, .resume_from = old_rv},
                    recorder.Handler());
  informer.Start();
  EXPECT_TRUE(Eventually([&] { return informer.relists() == 1; }));
  EXPECT_TRUE(Eventually([&] { return Value(informer, ns + "/a") == "2"; }));
  EXPECT_EQ(Value(informer, ns + "/b"), "1");
  EXPECT_TRUE(Eventually([&] { return recorder.Saw(ns + "/a") && recorder.Saw(ns + "/b"); }));
  EXPECT_GE(informer.reconnects(), 1);
  informer.Stop();
}

// A handler that throws (an operator's handler indexing an odd object, say) is a bug: it is
// counted and logged, and neither the informer nor the process ends; the next change arrives.
TEST(Informer, AThrowingHandlerIsCountedAndTheNextChangeStillArrives) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  const Client client(LocalEnv::Get().Config());
  const std::string ns = LocalEnv::Get().FreshNamespace(client);
  Recorder recorder;
  const auto record = recorder.Handler();
  Informer informer(client,
                    {.type = kConfigMaps, .namespace_name = ns, .component = "informer-test"},
                    [&](const std::string& key, const nlohmann::json& object) {
                      if (key == ns + "/bad") throw std::runtime_error("the handler broke");
                      record(key, object);
                    });
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(10s));
  ASSERT_TRUE(client.Create(CollectionPath(kConfigMaps, ns), ConfigMap("bad", "1")).ok());
  ASSERT_TRUE(client.Create(CollectionPath(kConfigMaps, ns), ConfigMap("good", "1")).ok());
  EXPECT_TRUE(Eventually([&] { return recorder.Saw(ns + "/good"); }));
  EXPECT_EQ(PanicCounts()["informer-test"], 1U);
  EXPECT_EQ(Value(informer, ns + "/bad"), "1");  // the cache holds it all the same
  EXPECT_EQ(informer.relists(), 1);              // the watch went on: no restart
  informer.Stop();
}

}  // namespace
}  // namespace pipescale::kube
