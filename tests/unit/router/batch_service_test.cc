// The router's measure of each batch's service time (pipescale_router_batch_service_seconds),
// from which the operator learns d(b) per (task, variant, class, rows): the series it exports,
// and the handler applying the rules (routing/batch_sample.h) to real calls to a fake model pod
// on 127.0.0.1 (a router-formed batch measured once, from when it is sent).
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <sstream>
#include <thread>

#include "api/pipeline_parse.h"
#include "metrics/router_scrape.h"
#include "router/discovery.h"
#include "router/handler.h"
#include "support/fake_http_server.h"
#include "support/parsed_pipeline.h"
#include "support/pipelines.h"

namespace pipescale::router {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using routing::CallFacts;
using routing::PodEndpoint;

// The value of the series `name` + `labels` in Prometheus's text format, or nullopt.
std::optional<double> Value(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return std::nullopt;
}

std::string Labels(const std::string& rows, const std::string& klass = "cpu") {
  return R"({hardware_class=")" + klass + R"(",namespace="demo",pipeline="one",rows=")" + rows +
         R"(",task="a",variant="v"})";
}

// The labels the metrics carry: pipeline "one" in namespace "demo" (a RouterConfig holds atomics:
// it is named in place).
void NameOneInDemo(RouterConfig& config) {
  config.pipeline = "one";
  config.namespace_name = "demo";
}

constexpr const char* kSum = "pipescale_router_batch_service_seconds_sum";
constexpr const char* kCount = "pipescale_router_batch_service_seconds_count";

TEST(RouterMetrics, ABatchServiceSeriesHasASumAndACountAndNoQuantiles) {
  prometheus::Registry registry;
  RouterConfig config;
  NameOneInDemo(config);
  RouterMetrics metrics(registry, config);
  metrics.BatchService("a", "v", "cpu", 8, 0.25);
  metrics.BatchService("a", "v", "cpu", 8, 0.35);
  metrics.BatchService("a", "v", "cpu", 2, 0.1);
  const std::string text = prometheus::TextSerializer().Serialize(registry.Collect());
  EXPECT_EQ(Value(text, kCount + Labels("8")), 2) << text;
  EXPECT_NEAR(Value(text, kSum + Labels("8")).value_or(-1), 0.6, 1e-12);
  EXPECT_EQ(Value(text, kCount + Labels("2")), 1);
  EXPECT_EQ(text.find("quantile"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE pipescale_router_batch_service_seconds summary"), std::string::npos);
}

// The door watch reads the door's gauge alone (api::kRouterDoorPath): it holds the held requests
// by path, which the operator's reader sums, and nothing of the main registry's.
TEST(RouterMetrics, TheDoorsGaugeIsServedApartFromTheRestAndReadsAsTheOperatorReadsIt) {
  prometheus::Registry registry;
  RouterConfig config;
  NameOneInDemo(config);
  RouterMetrics metrics(registry, config);
  metrics.DoorWaiting("cars").Increment(3);
  metrics.DoorWaiting("").Increment();
  metrics.ColdRequests("cars").Increment(3);
  const std::string door =
      prometheus::TextSerializer().Serialize(metrics.door_collectable()->Collect());
  EXPECT_EQ(pipescale::metrics::DoorWaitingIn(door),
            (std::map<std::string, double>{{"", 1}, {"cars", 3}}))
      << door;
  EXPECT_EQ(door.find("pipescale_router_cold_requests"), std::string::npos) << door;
  const std::string rest = prometheus::TextSerializer().Serialize(registry.Collect());
  EXPECT_TRUE(pipescale::metrics::DoorWaitingIn(rest).empty()) << "served twice at /metrics";
  EXPECT_NE(rest.find("pipescale_router_cold_requests"), std::string::npos);
}

// The handler on its own loop, in front of a fake model pod whose answers the test writes.
class BatchServiceHandlerTest : public ::testing::Test {
 protected:
  // The one-task pipeline (task a, variant v), with an SLO long enough for a batch's wait.
  static model::Pipeline Pipeline() {
    json spec = testing::OneTaskPipeline("one", "demo");
    spec["spec"]["paths"][0]["sloMs"] = 2000;
    return testing::ParsedPipeline(spec.dump());
  }

  // The pod answers `parameters` after `ms`, its outputs the inputs it was sent.
  void Answer(json parameters, int ms) {
    pod_.SetHandler([parameters, ms](const testing::FakeHttpServer::Request& r) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      const json request = json::parse(r.body);
      json body = {{"outputs", request["inputs"]}};
      if (!parameters.empty()) body["parameters"] = parameters;
      return testing::HttpResponse(200, "application/json", body.dump());
    });
  }

  // Routes to the fake pod, of class `klass` and server batch `batch`; the router forms batches
  // of `router_batch` rows (waiting up to `wait_ms`) when it is above 0.
  void Route(const std::string& klass, int batch, int router_batch = 0, double wait_ms = 0) {
    const PodEndpoint pod{.name = "pod",
                          .address = pod_.url().substr(7),
                          .variant = "v",
                          .hardware_class = klass,
                          .batch = batch};
    DataPlaneParts parts;
    if (router_batch > 0) parts.batches = {{"a", "v", router_batch, wait_ms}};
    config_.table.store(MakeTable(Pipeline(), {{"a", {pod}}}, known_, parts));
  }

  // Sends `clients` requests of `rows` rows at once; their statuses and their longest time.
  std::pair<std::vector<int>, double> Send(int clients, int rows) {
    std::vector<int> codes;
    const auto start = std::chrono::steady_clock::now();
    for (int c = 0; c < clients; ++c) {
      asio::co_spawn(io_, Infer(rows), [&](const std::exception_ptr& e, unsigned code) {
        codes.push_back(e ? -1 : static_cast<int>(code));
      });
    }
    io_.restart();
    io_.run_for(10s);
    return {codes, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
  }

  asio::awaitable<unsigned> Infer(int rows) {
    HttpRequest request{http::verb::post, "/v2/models/one/infer", 11};
    request.set("x-pipescale-path", "p");
    const std::vector<double> data(2 * rows, 1.5);
    request.body() =
        json{{"inputs",
              {{{"name", "x"}, {"datatype", "FP32"}, {"shape", {rows, 2}}, {"data", data}}}}}
            .dump();
    const ClientResponse response = co_await handler_->Handle(request);
    co_return response.result_int();
  }

  std::string Metrics() const {
    return prometheus::TextSerializer().Serialize(registry_.Collect());
  }

  std::atomic<int>& Outstanding() { return *config_.table.load()->pods[0][0]->outstanding; }

  BatchServiceHandlerTest() {
    config_.pipeline = "one";
    config_.namespace_name = "demo";
    config_.policy.admission = false;
    metrics_ = std::make_unique<RouterMetrics>(registry_, config_);
    handler_ = std::make_unique<PipelineHandler>(config_, *metrics_, upstream_, 1);
  }

  testing::FakeHttpServer pod_{nullptr};
  prometheus::Registry registry_;
  RouterConfig config_;
  Known known_;
  asio::io_context io_;
  UpstreamPool upstream_{io_.get_executor()};
  std::unique_ptr<RouterMetrics> metrics_;
  std::unique_ptr<PipelineHandler> handler_;
};

// A pod that batches nothing and reports no queue, with no other call outstanding: the whole
// call is the batch, of the rows the request had.
TEST_F(BatchServiceHandlerTest, AnIdlePodThatReportsNoQueueIsMeasuredWholeByTheRowsSent) {
  Answer(json::object(), 20);
  Route("cpu", 1);
  const auto [codes, seconds] = Send(1, 3);
  ASSERT_EQ(codes, std::vector<int>({200}));
  const std::string m = Metrics();
  EXPECT_EQ(Value(m, kCount + Labels("3")), 1) << m;
  EXPECT_GE(Value(m, kSum + Labels("3")).value_or(-1), 0.020);
  EXPECT_LE(Value(m, kSum + Labels("3")).value_or(-1), seconds);
  // Once more with a call already outstanding there (another request's): it may have queued
  // behind it, and the pod does not say, so it is not measured.
  Outstanding() = 1;
  EXPECT_EQ(Send(1, 3).first, std::vector<int>({200}));
  Outstanding() = 0;
  EXPECT_EQ(Value(Metrics(), kCount + Labels("3")), 1);
}

// A pod that forms its own batches: measured past its queue, by the rows it says its batch had;
// a batch it does not size says nothing.
TEST_F(BatchServiceHandlerTest, AServerBatchIsMeasuredPastItsQueueByTheRowsItReports) {
  Answer({{"pipescale_queue_ms", 20}, {"pipescale_batch_rows", 5}}, 30);
  Route("cpu", 8);
  ASSERT_EQ(Send(1, 1).first, std::vector<int>({200}));
  std::string m = Metrics();
  EXPECT_EQ(Value(m, kCount + Labels("5")), 1) << m;
  const std::string call = R"(pipescale_router_task_duration_seconds_sum{namespace="demo",)"
                           R"(pipeline="one",task="a",variant="v"})";
  EXPECT_NEAR(Value(m, kSum + Labels("5")).value_or(-1), Value(m, call).value_or(-1) - 0.020, 1e-9)
      << m;
  Answer({{"pipescale_queue_ms", 20}}, 30);
  ASSERT_EQ(Send(1, 1).first, std::vector<int>({200}));
  m = Metrics();
  EXPECT_EQ(Value(m, kCount + Labels("5")), 1);
  EXPECT_EQ(Value(m, kCount + Labels("1")), std::nullopt) << m;
}

TEST_F(BatchServiceHandlerTest, NoClassOrAHostileBatchMakesNoSeries) {
  Answer({{"pipescale_queue_ms", 1}, {"pipescale_batch_rows", 4}}, 0);
  Route("", 1);
  ASSERT_EQ(Send(1, 1).first, std::vector<int>({200}));
  Answer({{"pipescale_queue_ms", 1}, {"pipescale_batch_rows", 1000000}}, 0);
  Route("cpu", 1);
  ASSERT_EQ(Send(1, 1).first, std::vector<int>({200}));
  EXPECT_EQ(Metrics().find(kCount), std::string::npos) << Metrics();
}

// Four requests of one row each make one batch of four: one sample (the count is batches), every
// client answered. Then one request alone waits 150 ms in the router for its batch to fill: the
// sample is the pod's 30 ms, not that wait.
TEST_F(BatchServiceHandlerTest, ARouterFormedBatchIsMeasuredOnceFromWhenItIsSent) {
  Answer(json::object(), 30);
  Route("cpu", 1, 4, 150);
  EXPECT_EQ(Send(4, 1).first, std::vector<int>(4, 200));
  std::string m = Metrics();
  EXPECT_EQ(Value(m, kCount + Labels("4")), 1) << m;
  EXPECT_EQ(pod_.requests(), 1);
  const auto [codes, seconds] = Send(1, 1);
  EXPECT_EQ(codes, std::vector<int>({200}));
  EXPECT_GE(seconds, 0.150);
  m = Metrics();
  EXPECT_EQ(Value(m, kCount + Labels("1")), 1) << m;
  EXPECT_GE(Value(m, kSum + Labels("1")).value_or(-1), 0.030);
  EXPECT_LT(Value(m, kSum + Labels("1")).value_or(-1), 0.120);
}

}  // namespace
}  // namespace pipescale::router
