// The kube client against a fake apiserver: what it buffers is capped. An answer past the cap
// is an error value, whether it announces its size or not, and a watch keeps streaming events of
// any number while each one is held to its own cap.
#include "kube/client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "support/fake_http_server.h"

namespace pipescale::kube {
namespace {

using testing::FakeHttpServer;
using testing::HttpResponse;

constexpr size_t kMiB = size_t{1} << 20;

// A list of `bytes` or a little more: ConfigMaps whose data pads it out.
std::string ListOfAbout(size_t bytes) {
  std::string items;
  for (int i = 0; items.size() < bytes; ++i) {
    items += (i ? "," : "") + std::string(R"({"metadata":{"name":"cm)") + std::to_string(i) +
             R"("},"data":{"k":")" + std::string(64 * 1024, 'x') + R"("}})";
  }
  return R"({"kind":"ConfigMapList","metadata":{"resourceVersion":"7"},"items":[)" + items + "]}";
}

// An answer without Content-Length: its size shows only as it arrives.
std::string Unannounced(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + body;
}

ClusterConfig ConfigFor(const FakeHttpServer& server) {
  return ClusterConfig{.server = server.url()};
}

TEST(KubeClient, AListPastTheCapIsRefusedAnnouncedOrNot) {
  const std::string list = ListOfAbout(2 * kMiB);
  for (const bool announced : {true, false}) {
    FakeHttpServer server([&](const FakeHttpServer::Request&) {
      return announced ? HttpResponse(200, "application/json", list) : Unannounced(list);
    });
    ASSERT_TRUE(server.ok());
    const Client small(ConfigFor(server), {.max_answer_bytes = kMiB});
    const auto refused = small.Get("/api/v1/configmaps");
    ASSERT_FALSE(refused.ok()) << "announced " << announced;
    EXPECT_EQ(refused.error().kind, ErrorKind::kInvalid);
    EXPECT_NE(refused.error().message.find("GET /api/v1/configmaps"), std::string::npos)
        << refused.error().message;
    EXPECT_NE(refused.error().message.find("larger than 1 MiB"), std::string::npos)
        << refused.error().message;
    // The default cap holds real lists.
    const Client generous(ConfigFor(server));
    const auto listed = generous.Get("/api/v1/configmaps");
    ASSERT_TRUE(listed.ok()) << listed.error().message;
    EXPECT_GT((*listed)["items"].size(), 20u);
  }
}

TEST(KubeClient, DefaultCapIsGenerousForLists) {
  EXPECT_GE(ClientLimits{}.max_answer_bytes, 256 * kMiB);
  // An apiserver stores objects of at most about 1.5 MiB (etcd's request limit).
  EXPECT_GE(ClientLimits{}.max_event_bytes, 2 * kMiB);
}

// Watch events as the apiserver streams them, one JSON object a line.
std::string Event(const std::string& type, const std::string& name, size_t pad = 0) {
  return R"({"type":")" + type + R"(","object":{"metadata":{"name":")" + name +
         R"(","resourceVersion":"1"},"data":{"k":")" + std::string(pad, 'x') + "\"}}}\n";
}

TEST(KubeClient, AWatchStreamsPastTheAnswerCapButHoldsEachEventToItsCap) {
  // Forty events of 64 KiB: 2.5 MiB in all, past a 1 MiB answer cap, each within 128 KiB.
  std::string stream;
  for (int i = 0; i < 40; ++i) stream += Event("ADDED", "cm" + std::to_string(i), 64 * 1024);
  FakeHttpServer server([&](const FakeHttpServer::Request&) { return Unannounced(stream); });
  ASSERT_TRUE(server.ok());
  const Client client(ConfigFor(server), {.max_answer_bytes = kMiB, .max_event_bytes = 128 * 1024});
  std::atomic<bool> stop{false};
  int events = 0;
  const Status watched = client.Watch(
      "/api/v1/configmaps?watch=1",
      [&](const WatchEvent& e) {
        EXPECT_EQ(e.type, "ADDED");
        ++events;
        return true;
      },
      stop);
  EXPECT_TRUE(watched.ok()) << watched.error().message;
  EXPECT_EQ(events, 40);

  // One event past its cap ends the watch with an error, after the events before it.
  const std::string big = Event("ADDED", "a") + Event("MODIFIED", "huge", 256 * 1024);
  server.SetHandler([&](const FakeHttpServer::Request&) { return Unannounced(big); });
  events = 0;
  const Status refused = client.Watch(
      "/api/v1/configmaps?watch=1",
      [&](const WatchEvent&) {
        ++events;
        return true;
      },
      stop);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kInvalid);
  EXPECT_NE(refused.error().message.find("larger than 128 KiB"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(events, 1);
}

// An error answer to a watch is kept short whatever its size.
TEST(KubeClient, AWatchsErrorAnswerIsCapped) {
  const std::string page = std::string(8 * kMiB, '<');
  FakeHttpServer server(
      [&](const FakeHttpServer::Request&) { return HttpResponse(500, "text/html", page); });
  ASSERT_TRUE(server.ok());
  const Client client(ConfigFor(server), {.max_answer_bytes = kMiB});
  std::atomic<bool> stop{false};
  const Status s = client.Watch(
      "/api/v1/configmaps?watch=1", [](const WatchEvent&) { return true; }, stop);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::kTransient);
  EXPECT_NE(s.error().message.find("HTTP 500"), std::string::npos) << s.error().message.size();
  EXPECT_LT(s.error().message.size(), 1024u);
}

}  // namespace
}  // namespace pipescale::kube
