// The requests held at the routers' doors, read from the routers: prometheus-cpp's own exposition
// (the router's, served by its Exposer) summed by path over the routers that answer, and text
// from elsewhere passed over line by line, never crashing the reader.
#include "metrics/router_scrape.h"

#include <gtest/gtest.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "support/mutate.h"

namespace pipescale::metrics {
namespace {

// A router's metrics as it serves them: the door gauge by path, beside another family whose
// name starts the same.
struct Router {
  explicit Router(const std::map<std::string, double>& held)
      : registry(std::make_shared<prometheus::Registry>()), exposer("127.0.0.1:0") {
    auto& door = prometheus::BuildGauge()
                     .Name(std::string(kDoorWaitingMetric))
                     .Help("Requests held at the door")
                     .Register(*registry);
    for (const auto& [path, n] : held) door.Add({{"path", path}}).Set(n);
    prometheus::BuildGauge()
        .Name(std::string(kDoorWaitingMetric) + "_peak")
        .Help("not the door's count")
        .Register(*registry)
        .Add({{"path", "a"}})
        .Set(100);
    exposer.RegisterCollectable(registry);
  }
  std::string Url() const {
    return "http://127.0.0.1:" + std::to_string(exposer.GetListeningPorts().front()) + "/metrics";
  }
  std::shared_ptr<prometheus::Registry> registry;
  prometheus::Exposer exposer;
};

TEST(RouterScrape, TheHeldRequestsAreSummedByPathOverTheRoutersThatAnswer) {
  const Router one({{"a", 2}, {"b", 0}}), two({{"a", 1}, {"", 4}});
  // A port nothing listens on: a router gone (its listener closed).
  const std::string gone = "http://127.0.0.1:1/metrics";
  const auto held = ReadDoorWaiting({one.Url(), gone, two.Url()});
  ASSERT_TRUE(held.ok()) << held.error().message;
  EXPECT_EQ(*held, (std::map<std::string, double>{{"", 4}, {"a", 3}, {"b", 0}}));
  const auto none = ReadDoorWaiting({gone});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find(gone), std::string::npos) << none.error().message;
  EXPECT_FALSE(ReadDoorWaiting({}).ok());
}

TEST(RouterScrape, OnlyTheDoorGaugesSamplesCountWithTheirPathUnescaped) {
  const std::string text =
      "# HELP pipescale_router_door_waiting_requests held\n"
      "# TYPE pipescale_router_door_waiting_requests gauge\n"
      "pipescale_router_door_waiting_requests{path=\"a\"} 2\n"
      "pipescale_router_door_waiting_requests{namespace=\"x\",path=\"a\"} 1.5 1733600000000\n"
      "pipescale_router_door_waiting_requests{path=\"q\\\"x\"} 1\n"
      "pipescale_router_door_waiting_requests 3\n"
      "pipescale_router_door_waiting_requests_peak{path=\"a\"} 9\n"
      "pipescale_router_door_waiting_requests{path=\"a\"} NaN\n"
      "pipescale_router_door_waiting_requests{path=\"a\"} 2x\n"
      "pipescale_router_door_waiting_requests{path=\"a\" 2\n"
      "pipescale_router_door_waiting_requests{path=\"b\"}";
  EXPECT_EQ(DoorWaitingIn(text), (std::map<std::string, double>{{"", 3}, {"a", 3.5}, {"q\"x", 1}}));
}

// What another process sends: mutations of an exposition never crash the reader, and every
// value it keeps is finite.
TEST(RouterScrape, MutatedExpositionsNeverCrashTheReader) {
  const std::string seed =
      "pipescale_router_door_waiting_requests{path=\"a\",le=\"x\"} 2\n"
      "pipescale_router_door_waiting_requests{path=\"b\\\\\"} 1e3\n";
  std::mt19937 rng(47);
  for (int i = 0; i < 20000; ++i) {
    const std::string text =
        testing::Mutate(seed, rng, 6, [&] { return static_cast<char>(rng() % 256); });
    for (const auto& [path, n] : DoorWaitingIn(text)) EXPECT_TRUE(std::isfinite(n)) << text;
  }
}

}  // namespace
}  // namespace pipescale::metrics
