// How the OIP client names what answers at an address: nothing, a web server that is not a
// model server, a model server without the model, one that is not ready, and one that fails.
#include "profile/oip_client.h"

#include <gtest/gtest.h>

#include "support/fake_http_server.h"

namespace pipescale::profile {
namespace {

using testing::FakeHttpServer;
using testing::HttpResponse;
using namespace std::chrono_literals;

constexpr const char* kMetadata =
    R"({"name": "m", "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}]})";
constexpr const char* kAnswer = R"({"outputs": [], "parameters": {"pipescale_queue_ms": 0.25}})";

// An OIP server for model "m"; `infer` answers inferences.
FakeHttpServer::Handler Oip(std::string infer) {
  return [infer](const FakeHttpServer::Request& r) {
    if (r.target == "/v2/health/ready") return HttpResponse(200, "application/json", "{}");
    if (r.target == "/v2/models/m") return HttpResponse(200, "application/json", kMetadata);
    if (r.target == "/v2/models/m/infer" && r.method == "POST") return infer;
    return HttpResponse(404, "application/json", R"({"error": "no such model"})");
  };
}

class OipClientTest : public ::testing::Test {
 protected:
  Result<std::vector<InputTensor>> Handshake(const std::string& model = "m") {
    OipClient client(address(), model, 5s);
    return client.Handshake({});
  }
  std::string address() const { return server_.url().substr(7); }

  FakeHttpServer server_{Oip(HttpResponse(200, "application/json", kAnswer))};
};

TEST_F(OipClientTest, AModelServer) {
  auto inputs = Handshake();
  ASSERT_TRUE(inputs.ok()) << inputs.error().message;
  EXPECT_EQ(DescribeInputs(*inputs), "x [b, 4] FP32");
  EXPECT_EQ(server_.last_request().target, "/v2/models/m/infer");  // the probe
  OipClient client(server_.url(), "m", 5s);                        // a URL works as well
  auto timed = client.Infer(InferBody(*inputs, 3));
  ASSERT_TRUE(timed.ok()) << timed.error().message;
  EXPECT_EQ(timed->answer.queue_ms, 0.25);
  EXPECT_GT(timed->round_trip_ms, 0);
  EXPECT_NE(server_.last_request().body.find("\"shape\":[3,4]"), std::string::npos);
}

TEST_F(OipClientTest, NothingListening) {
  const std::string address = "127.0.0.1:1";
  OipClient client(address, "m", 5s);
  auto r = client.Handshake({});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kTransient);
  EXPECT_EQ(r.error().message.rfind("nothing answers at 127.0.0.1:1 (GET /v2/health/ready: ", 0),
            0u)
      << r.error().message;
  EXPECT_TRUE(r.error().message.ends_with("is a model server listening there?"));
}

TEST_F(OipClientTest, AWebServerThatIsNotAModelServer) {
  server_.SetHandler([](const FakeHttpServer::Request&) {
    return HttpResponse(404, "text/html", "<html><body>Not Found</body></html>");
  });
  auto r = Handshake();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalid);
  EXPECT_EQ(r.error().message,
            address() +
                " does not speak the Open Inference Protocol: GET /v2/health/ready answered 404 "
                "(text/html): \"<html><body>Not Found</body></html>\"");
  // One that answers 200 to everything with a page.
  server_.SetHandler([](const FakeHttpServer::Request&) {
    return HttpResponse(200, "text/html", "<html>welcome</html>");
  });
  r = Handshake();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, address() +
                                   " does not speak the Open Inference Protocol: GET /v2/models/m "
                                   "answered 200 (text/html): \"<html>welcome</html>\"");
}

TEST_F(OipClientTest, AnInferenceThatIsNotAnOipAnswer) {
  server_.SetHandler(Oip(HttpResponse(200, "text/plain", "ok")));
  auto r = Handshake();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalid);
  EXPECT_EQ(r.error().message, address() +
                                   " does not speak the Open Inference Protocol: POST "
                                   "/v2/models/m/infer answered 200, but the answer is not a JSON "
                                   "object: \"ok\"");
  server_.SetHandler(Oip(HttpResponse(200, "application/json", R"({"result": 1})")));
  r = Handshake();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("the answer has no \"outputs\" array"), std::string::npos);
}

TEST_F(OipClientTest, AModelItDoesNotServeAndAServerNotReady) {
  auto other = Handshake("resnet");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(
      other.error().message,
      address() +
          " does not serve the model \"resnet\" (GET /v2/models/resnet answered 404: "
          "\"{\\\"error\\\": \\\"no such model\\\"}\"); name the server's model with --model");
  server_.SetHandler([](const FakeHttpServer::Request&) {
    return HttpResponse(400, "application/json", R"({"ready": false})");
  });
  auto not_ready = Handshake();
  ASSERT_FALSE(not_ready.ok());
  EXPECT_EQ(not_ready.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(not_ready.error().message.rfind(address() + " is not ready: GET /v2/health/ready "
                                                        "answered 400",
                                            0),
            0u);
}

TEST_F(OipClientTest, FailuresOfAnInference) {
  server_.SetHandler(Oip(HttpResponse(503, "application/json", R"({"error": "overloaded"})")));
  OipClient client(address(), "m", 5s);
  auto refused = client.Infer("{}");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(refused.error().message,
            "POST /v2/models/m/infer answered 503: \"{\\\"error\\\": \\\"overloaded\\\"}\"");
  // A connection closed without an answer.
  server_.SetHandler([](const FakeHttpServer::Request&) { return std::string(); });
  auto cut = client.Infer("{}");
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().kind, ErrorKind::kTransient);
  EXPECT_EQ(cut.error().message.rfind("POST /v2/models/m/infer: ", 0), 0u) << cut.error().message;
}

}  // namespace
}  // namespace pipescale::profile
