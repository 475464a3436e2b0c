// PrometheusClient against a FAKE Prometheus: a raw HTTP server in this process that sends
// answers a real Prometheus never would (HTML with status 200, a cut body, numbers where
// strings belong, a matrix for an instant query, ...) but a proxy or a "compatible" backend
// may. Each must come back as an Error with a short, printable message, never an exception.
#include "metrics/prometheus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>

#include "metrics/source.h"
#include "support/fake_http_server.h"

namespace pipescale::metrics {
namespace {

using namespace std::chrono_literals;
using testing::FakeHttpServer;
using testing::HttpResponse;

std::string Json(std::string_view body, int status = 200) {
  return HttpResponse(status, "application/json", body);
}

// A success answer around `data`.
std::string Success(const std::string& data) {
  return Json(R"({"status":"success","data":)" + data + "}");
}

std::string VectorOf(const std::string& items) {
  return Success(R"({"resultType":"vector","result":[)" + items + "]}");
}

std::string MatrixOf(const std::string& items) {
  return Success(R"({"resultType":"matrix","result":[)" + items + "]}");
}

// What a status condition needs of a message: valid UTF-8 (nlohmann's dump throws otherwise,
// as the status write would), no raw control characters, and short.
void ExpectPrintable(const std::string& message) {
  EXPECT_NO_THROW((void)nlohmann::json(message).dump()) << message;
  for (const char c : message) {
    EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20) << message;
  }
  EXPECT_LT(message.size(), 1200u) << message;
}

class PrometheusClientTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.ok()); }

  void Answer(std::string response) {
    server_.SetHandler([response](const FakeHttpServer::Request&) { return response; });
  }

  // Query must fail with `kind` and a message containing `part`.
  void ExpectQueryError(const std::string& response, ErrorKind kind, const std::string& part) {
    Answer(response);
    auto samples = client_.Query("up");
    ASSERT_FALSE(samples.ok()) << "accepted: " << response;
    EXPECT_EQ(samples.error().kind, kind) << samples.error().message;
    EXPECT_NE(samples.error().message.find(part), std::string::npos) << samples.error().message;
    ExpectPrintable(samples.error().message);
  }

  void ExpectRangeError(const std::string& response, const std::string& part) {
    Answer(response);
    auto series = client_.QueryRange("up", 0, 10, 5);
    ASSERT_FALSE(series.ok()) << "accepted: " << response;
    EXPECT_EQ(series.error().kind, ErrorKind::kInvalid) << series.error().message;
    EXPECT_NE(series.error().message.find(part), std::string::npos) << series.error().message;
    ExpectPrintable(series.error().message);
  }

  FakeHttpServer server_{[](const FakeHttpServer::Request&) { return Json("{}"); }};
  PrometheusClient client_{server_.url(), 2s};
};

TEST_F(PrometheusClientTest, ReadsAVectorOfStringValues) {
  Answer(VectorOf(R"({"metric":{"path":"a"},"value":[1700000000.5,"1.5"]},)"
                  R"({"metric":{"path":"b"},"value":[1700000000.5,"NaN"]},)"
                  R"({"metric":{"path":"c"},"value":[1700000000.5,"+Inf"]},)"
                  R"({"metric":{"path":"d"},"value":[1700000000.5,"-Inf"]},)"
                  R"({"metric":{},"value":[1700000000.5,"2.5e3"]})"));
  auto samples = client_.Query("sum(rate(x[1m]))");
  ASSERT_TRUE(samples.ok()) << samples.error().message;
  EXPECT_EQ(server_.last_request().target, "/api/v1/query");
  EXPECT_EQ(testing::FormValue(server_.last_request().body, "query"), "sum(rate(x[1m]))");
  ASSERT_EQ(samples->size(), 5u);
  EXPECT_EQ((*samples)[0].labels.at("path"), "a");
  EXPECT_EQ((*samples)[0].value, 1.5);
  EXPECT_TRUE(std::isnan((*samples)[1].value));
  EXPECT_EQ((*samples)[2].value, INFINITY);
  EXPECT_EQ((*samples)[3].value, -INFINITY);
  EXPECT_TRUE((*samples)[4].labels.empty());
  EXPECT_EQ((*samples)[4].value, 2500);
}

TEST_F(PrometheusClientTest, AcceptsNumbersWhereStringsBelong) {
  // Some Prometheus-compatible backends send sample values as JSON numbers.
  Answer(VectorOf(R"({"metric":{"path":"a"},"value":[1700000000,2.5]},)"
                  R"({"metric":{"path":"b"},"value":[1700000000,3]})"));
  auto samples = client_.Query("x");
  ASSERT_TRUE(samples.ok()) << samples.error().message;
  ASSERT_EQ(samples->size(), 2u);
  EXPECT_EQ((*samples)[0].value, 2.5);
  EXPECT_EQ((*samples)[1].value, 3);
}

TEST_F(PrometheusClientTest, ReadsAScalarAsOneUnlabeledSample) {
  Answer(Success(R"({"resultType":"scalar","result":[1700000000,"3"]})"));
  auto samples = client_.Query("1 + 2");
  ASSERT_TRUE(samples.ok()) << samples.error().message;
  ASSERT_EQ(samples->size(), 1u);
  EXPECT_TRUE(samples->front().labels.empty());
  EXPECT_EQ(samples->front().value, 3);

  Answer(VectorOf(""));
  samples = client_.Query("absent");
  ASSERT_TRUE(samples.ok()) << samples.error().message;
  EXPECT_TRUE(samples->empty());
}

TEST_F(PrometheusClientTest, ReadsAMatrix) {
  Answer(MatrixOf(R"({"metric":{"job":"x"},"values":[[100,"1"],[105,2],[110,"+Inf"]]},)"
                  R"({"metric":{"job":"y"},"values":[]})"));
  auto series = client_.QueryRange("x", 100, 110, 5);
  ASSERT_TRUE(series.ok()) << series.error().message;
  EXPECT_EQ(server_.last_request().target, "/api/v1/query_range");
  EXPECT_EQ(std::stod(testing::FormValue(server_.last_request().body, "step")), 5);
  ASSERT_EQ(series->size(), 2u);
  EXPECT_EQ((*series)[0].labels.at("job"), "x");
  const std::vector<std::pair<double, double>> points = {{100, 1}, {105, 2}, {110, INFINITY}};
  EXPECT_EQ((*series)[0].points, points);
  EXPECT_TRUE((*series)[1].points.empty());
}

TEST_F(PrometheusClientTest, KeepsPrometheussOwnErrors) {
  ExpectQueryError(Json(R"({"status":"error","errorType":"bad_data","error":"parse error"})", 400),
                   ErrorKind::kInvalid, "prometheus: bad_data: parse error");
  ExpectQueryError(
      Json(R"({"status":"error","errorType":"timeout","error":"query timed out"})", 503),
      ErrorKind::kTransient, "prometheus: timeout: query timed out");
  // An error answer whose fields are not strings still gives an error, not an exception.
  ExpectQueryError(Json(R"({"status":"error","errorType":5,"error":{"a":1}})", 422),
                   ErrorKind::kInvalid, "prometheus: error: unknown error");
}

TEST_F(PrometheusClientTest, AnswersThatAreNotJsonAreErrors) {
  // A proxy's sign-in page with status 200, with a control character and a byte that is not
  // UTF-8: both must come out escaped.
  ExpectQueryError(HttpResponse(200, "text/html", "<html>\x01Sign in\xff</html>"),
                   ErrorKind::kTransient,
                   R"(response is not JSON (HTTP 200, text/html): "<html>\x01Sign in\xff</html>")");
  ExpectQueryError(HttpResponse(502, "text/html", "<h1>Bad Gateway</h1>"), ErrorKind::kTransient,
                   "response is not JSON (HTTP 502, text/html)");
  ExpectQueryError(HttpResponse(200, "application/json", ""), ErrorKind::kTransient,
                   "response is not JSON (HTTP 200, application/json): \"\"");
  // Cut inside the JSON, with a Content-Length that matches what was sent.
  ExpectQueryError(Json(R"({"status":"success","data":{"resultType":"vector","result":[{"me)"),
                   ErrorKind::kTransient, "response is not JSON (HTTP 200, application/json)");
}

TEST_F(PrometheusClientTest, ATruncatedTransferIsTransient) {
  // Promises 500 bytes, sends 30 and closes.
  ExpectQueryError(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n"
      R"({"status":"success","data":{)",
      ErrorKind::kTransient, "prometheus " + server_.url() + "/api/v1/query: ");
}

TEST_F(PrometheusClientTest, QuotesAtMostAFewHundredBytesOfABody) {
  const std::string page = "<html>" + std::string(100'000, 'x') + "</html>";
  Answer(HttpResponse(200, "text/html", page));
  auto samples = client_.Query("up");
  ASSERT_FALSE(samples.ok());
  EXPECT_LT(samples.error().message.size(), 400u) << samples.error().message;
  EXPECT_NE(samples.error().message.find(R"(xxx..." (100013 bytes))"), std::string::npos)
      << samples.error().message;
}

TEST_F(PrometheusClientTest, WrongShapesAreErrors) {
  const ErrorKind invalid = ErrorKind::kInvalid;
  ExpectQueryError(Json("[1, 2]"), invalid, "response has no \"status\"");
  ExpectQueryError(Json(R"({"status":1})"), invalid, "response has no \"status\"");
  ExpectQueryError(Json(R"({"status":"success"})"), invalid, "data: want an object, got nothing");
  ExpectQueryError(Success("[]"), invalid, "data: want an object, got an array of 0");
  ExpectQueryError(Success(R"({"result":[]})"), invalid, "data.resultType: want a string");
  ExpectQueryError(Success(R"({"resultType":"vector"})"), invalid, "data.result: want a value");
  ExpectQueryError(Success(R"({"resultType":"vector","result":{}})"), invalid,
                   "data.result: want an array, got an object");
  ExpectQueryError(VectorOf("5"), invalid, "data.result[0]: want an object, got 5");
  ExpectQueryError(VectorOf(R"({"value":[1,"1"]})"), invalid,
                   "data.result[0].metric: want an object, got nothing");
  ExpectQueryError(VectorOf(R"({"metric":{"path":5},"value":[1,"1"]})"), invalid,
                   "data.result[0].metric.path: want a string, got 5");
  ExpectQueryError(VectorOf(R"({"metric":{},"value":[1,"1"]},{"metric":{}})"), invalid,
                   "data.result[1].value: want a [time, value] pair, got nothing");
  ExpectQueryError(VectorOf(R"({"metric":{},"value":[1]})"), invalid,
                   "data.result[0].value: want a [time, value] pair, got an array of 1");
  ExpectQueryError(VectorOf(R"({"metric":{},"value":[1,"2",3]})"), invalid, "got an array of 3");
  ExpectQueryError(VectorOf(R"({"metric":{},"value":["1700000000","2"]})"), invalid,
                   R"(data.result[0].value[0]: want a number (unix seconds), got "1700000000")");
  ExpectQueryError(Success(R"({"resultType":"scalar","result":"3"})"), invalid,
                   "data.result: want a [time, value] pair");
}

TEST_F(PrometheusClientTest, ValuesThatAreNotNumbersAreErrors) {
  for (const char* value : {R"("fast")", R"("1.5abc")", R"("")", R"(" 1")", R"("+-1")", "true",
                            "null", "{}", R"("1e999")"}) {
    ExpectQueryError(VectorOf(std::string(R"({"metric":{},"value":[1,)") + value + "]}"),
                     ErrorKind::kInvalid,
                     "data.result[0].value[1]: want a number or a numeric string");
  }
}

TEST_F(PrometheusClientTest, AnInstantQueryThatReturnsAMatrixIsAnError) {
  ExpectQueryError(MatrixOf(R"({"metric":{},"values":[[1,"1"]]})"), ErrorKind::kInvalid,
                   "prometheus: query returns a matrix, not a vector");
  ExpectQueryError(Success(R"({"resultType":"string","result":[1,"x"]})"), ErrorKind::kInvalid,
                   "prometheus: query returns a string, not a vector");
}

TEST_F(PrometheusClientTest, RangeQueriesCheckTheirShapeToo) {
  ExpectRangeError(VectorOf(R"({"metric":{},"value":[1,"1"]})"),
                   "prometheus: range query returns a vector, not a matrix");
  ExpectRangeError(MatrixOf(R"({"metric":{}})"),
                   "data.result[0].values: want an array, got nothing");
  ExpectRangeError(MatrixOf(R"({"metric":{},"values":[[1,"1"],[2]]})"),
                   "data.result[0].values[1]: want a [time, value] pair");
  ExpectRangeError(MatrixOf(R"({"metric":{},"values":[["1","1"]]})"),
                   "data.result[0].values[0][0]: want a number (unix seconds)");
  ExpectRangeError(MatrixOf(R"({"metric":{"a":["x"]},"values":[]})"),
                   "data.result[0].metric.a: want a string, got an array of 1");
}

TEST_F(PrometheusClientTest, DeepNestingIsRefused) {
  const std::string deep = std::string(10'000, '[') + std::string(10'000, ']');
  ExpectQueryError(VectorOf(deep), ErrorKind::kInvalid, "response nests deeper than 32 levels");
}

TEST_F(PrometheusClientTest, HugeAnswersAreCutOff) {
  const std::string huge(17 << 20, ' ');  // whitespace: valid JSON padding, 17 MiB of it
  ExpectQueryError(Json(huge + "{}"), ErrorKind::kInvalid, "response larger than 16 MiB");
  // Without a Content-Length the size shows only while reading.
  ExpectQueryError(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + huge +
          "{}",
      ErrorKind::kInvalid, "response larger than 16 MiB");
}

TEST_F(PrometheusClientTest, ASilentServerTimesOut) {
  // Silent for five times the client's patience: the silence is what is tested, and it ends,
  // so that the server can stop.
  server_.SetHandler([](const FakeHttpServer::Request&) {
    std::this_thread::sleep_for(1s);
    return Json("{}");
  });
  const PrometheusClient impatient(server_.url(), 200ms);
  auto samples = impatient.Query("up");
  ASSERT_FALSE(samples.ok());
  EXPECT_EQ(samples.error().kind, ErrorKind::kTransient) << samples.error().message;
}

// The address is quoted in the error (and so in the condition and the events), its password
// never: a real refused connection, no fake needed.
TEST(RedactUrl, HidesThePasswordAndNothingElse) {
  EXPECT_EQ(RedactUrl("https://alice:s3cret@prom.example:9090/api"),
            "https://alice:***@prom.example:9090/api");
  EXPECT_EQ(RedactUrl("https://tok3n@prom.example/"), "https://***@prom.example/");
  EXPECT_EQ(RedactUrl("http://prom:9090/x?a=b@c"), "http://prom:9090/x?a=b@c");
  EXPECT_EQ(RedactUrl("http://prom-operated.monitoring:9090"),
            "http://prom-operated.monitoring:9090");
  EXPECT_EQ(RedactUrl(""), "");
  const PrometheusClient client("http://alice:s3cret@127.0.0.1:1", 2s);
  auto samples = client.Query("up");
  ASSERT_FALSE(samples.ok());
  EXPECT_NE(samples.error().message.find("alice:***@127.0.0.1:1"), std::string::npos)
      << samples.error().message;
  EXPECT_EQ(samples.error().message.find("s3cret"), std::string::npos) << samples.error().message;
}

// Through the metrics source: the condition message must say which query got the bad answer.
model::Pipeline OnePath() {
  model::Pipeline p;
  p.name = "shop";
  p.namespace_name = "ns";
  p.spec.paths = {{.name = "p"}};
  p.spec.metrics.queries["arrivalRate"] = "sum(arrival_marker)";
  return p;
}

TEST_F(PrometheusClientTest, ReadSnapshotNamesTheQuery) {
  Answer(MatrixOf(R"({"metric":{},"values":[[1,"1"]]})"));
  auto snapshot = ReadSnapshot(client_, OnePath());
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().message,
            "metrics.pathRate: prometheus: query returns a matrix, not a vector");

  // Only the arrival query gets a proxy's page; the others are well formed, as numbers.
  server_.SetHandler([](const FakeHttpServer::Request& r) {
    if (testing::FormValue(r.body, "query") == "sum(arrival_marker)") {
      return HttpResponse(200, "text/html", "<html>login</html>");
    }
    return VectorOf(R"({"metric":{},"value":[1700000000,4]})");
  });
  snapshot = ReadSnapshot(client_, OnePath());
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().message.rfind(
                "metrics.arrivalRate: prometheus: response is not JSON (HTTP 200, text/html)", 0),
            0u)
      << snapshot.error().message;

  Answer(VectorOf(R"({"metric":{},"value":[1700000000,4]})"));
  snapshot = ReadSnapshot(client_, OnePath());
  ASSERT_TRUE(snapshot.ok()) << snapshot.error().message;
  EXPECT_EQ(snapshot->path_rates_rps.at("p"), 4);
}

}  // namespace
}  // namespace pipescale::metrics
