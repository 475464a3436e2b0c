// The informer's cache against a fake apiserver: each version of an object is decoded once, when
// it arrives, and every read shares that value; a relist decodes only the versions it has not
// seen. (tests/integration/kube/informer_test.cc runs it against a real kube-apiserver.)
#include "kube/informer.h"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "support/fake_http_server.h"

namespace pipescale::kube {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::FakeHttpServer;

// What the test's decoder keeps of a ConfigMap.
struct Value {
  std::string name;
  std::string value;
};

json ConfigMap(const std::string& name, const std::string& version, const std::string& value) {
  return {{"metadata",
           {{"name", name},
            {"namespace", "ns"},
            {"resourceVersion", version},
            {"labels", {{"group", value == "x" ? "x" : "other"}}},
            {"managedFields", json::array({{{"manager", "kubectl"}}})}}},
          {"data", {{"value", value}}}};
}

// A fake apiserver: lists `items`, and answers each watch after a short wait with nothing, or
// once with a 410 inside the stream when a relist is asked for.
class FakeApiserver {
 public:
  FakeApiserver()
      : server_([this](const FakeHttpServer::Request& r) { return Answer(r); }),
        client_(ClusterConfig{.server = server_.url()}) {}

  void SetItems(json items) {
    std::lock_guard lock(mu_);
    items_ = std::move(items);
  }
  void ExpireWatch() {
    std::lock_guard lock(mu_);
    expire_ = true;
  }
  const Client& client() const { return client_; }

 private:
  std::string Answer(const FakeHttpServer::Request& r) {
    std::unique_lock lock(mu_);
    if (r.target.find("watch=1") == std::string::npos) {
      const json list = {{"metadata", {{"resourceVersion", "100"}}}, {"items", items_}};
      return testing::HttpResponse(200, "application/json", list.dump());
    }
    if (std::exchange(expire_, false)) {
      const json expired = {{"type", "ERROR"}, {"object", {{"kind", "Status"}, {"code", 410}}}};
      return testing::HttpResponse(200, "application/json", expired.dump() + "\n");
    }
    lock.unlock();
    std::this_thread::sleep_for(50ms);
    return testing::HttpResponse(200, "application/json", "");
  }

  std::mutex mu_;
  json items_ = json::array();
  bool expire_ = false;
  FakeHttpServer server_;
  Client client_;
};

// Counts the decoder's calls and the changes the handler saw.
struct Counts {
  std::mutex mu;
  int decoded = 0;
  std::vector<std::string> changed;  // "key=value"
};

TypedInformer<Value> MakeInformer(const Client& client, Counts& counts) {
  return TypedInformer<Value>(
      client,
      {.type = kConfigMaps,
       .namespace_name = "ns",
       .min_backoff = 10ms,
       .indexes = {{"group",
                    [](const json& o) { return o["metadata"]["labels"].value("group", ""); }}}},
      [&counts](const json& object) {
        EXPECT_FALSE(object["metadata"].contains("managedFields")) << "trimmed before decoding";
        std::lock_guard lock(counts.mu);
        ++counts.decoded;
        return Value{object["metadata"]["name"], object["data"]["value"]};
      },
      [&counts](const std::string& key, const Value& v) {
        std::lock_guard lock(counts.mu);
        counts.changed.push_back(key + "=" + v.value);
      });
}

bool Eventually(const std::function<bool()>& pred) {
  for (int i = 0; i < 200; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(25ms);
  }
  return pred();
}

TEST(Informer, DecodesEachObjectOnceAndEveryReadSharesTheValue) {
  FakeApiserver api;
  api.SetItems({ConfigMap("a", "1", "x"), ConfigMap("b", "2", "y")});
  Counts counts;
  TypedInformer<Value> informer = MakeInformer(api.client(), counts);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(10s));

  const std::shared_ptr<const Value> a = informer.Get("ns/a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->value, "x");
  // The same value, not a copy parsed again: the cache's own, shared.
  EXPECT_EQ(informer.Get("ns/a").get(), a.get());
  EXPECT_EQ(informer.List().front().get(), a.get());
  ASSERT_EQ(informer.ByIndex("group", "x").size(), 1u);
  EXPECT_EQ(informer.ByIndex("group", "x").front().get(), a.get());
  EXPECT_EQ(informer.Get("ns/none"), nullptr);
  EXPECT_EQ(informer.decodes(), 2);
  std::lock_guard lock(counts.mu);
  EXPECT_EQ(counts.decoded, 2);
}

TEST(Informer, ARelistDecodesOnlyTheVersionsItHasNotSeen) {
  FakeApiserver api;
  api.SetItems({ConfigMap("a", "1", "x"), ConfigMap("b", "2", "y"), ConfigMap("c", "3", "z")});
  Counts counts;
  TypedInformer<Value> informer = MakeInformer(api.client(), counts);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(10s));
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard lock(counts.mu);
    return counts.changed.size() == 3;
  }));
  const std::shared_ptr<const Value> a = informer.Get("ns/a");

  // While the watch was away: b changed, c was deleted, d was created; a is as it was.
  api.SetItems({ConfigMap("a", "1", "x"), ConfigMap("b", "4", "y2"), ConfigMap("d", "5", "w")});
  api.ExpireWatch();
  ASSERT_TRUE(Eventually([&] { return informer.relists() == 2; }));
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard lock(counts.mu);
    return counts.changed.size() == 6;
  }));

  EXPECT_EQ(informer.decodes(), 5);  // a, b, c, then b and d again
  EXPECT_EQ(informer.Get("ns/a").get(), a.get());
  EXPECT_EQ(informer.Get("ns/b")->value, "y2");
  EXPECT_EQ(informer.Get("ns/c"), nullptr);
  std::lock_guard lock(counts.mu);
  const std::vector<std::string> relisted(counts.changed.begin() + 3, counts.changed.end());
  // The deleted one as it last was.
  EXPECT_EQ(relisted, (std::vector<std::string>{"ns/b=y2", "ns/d=w", "ns/c=z"}));
}

TEST(Informer, TheJsonInformerKeepsTheObjectWithoutManagedFields) {
  FakeApiserver api;
  api.SetItems({ConfigMap("a", "1", "x")});
  Informer informer(api.client(), {.type = kConfigMaps, .namespace_name = "ns"},
                    [](const std::string&, const json&) {});
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(10s));
  const std::optional<json> a = informer.Get("ns/a");
  ASSERT_TRUE(a);
  EXPECT_EQ((*a)["data"]["value"], "x");
  EXPECT_FALSE((*a)["metadata"].contains("managedFields"));
  EXPECT_EQ(informer.List().size(), 1u);
  EXPECT_EQ(informer.decodes(), 1);
}

}  // namespace
}  // namespace pipescale::kube
