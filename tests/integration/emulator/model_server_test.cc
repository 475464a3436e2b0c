// The emulated model server (a process of ours standing in for Triton) speaks the binary data
// extension as the router expects a model server to: binary inputs are checked against their
// shapes and the body, and come back as binary outputs; --max-body-bytes bounds a request; the
// queue timeout the operator sets (PIPESCALE_QUEUE_TIMEOUT_MS) refuses what waited past it; on
// SIGTERM it drains, serving what was sent to it before it stops.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "integration/harness/loopback.h"
#include "integration/harness/test_dir.h"
#include "integration/harness/wait.h"
#include "support/shell.h"
#include "support/text.h"

namespace pipescale {
namespace {

using nlohmann::json;

struct Answer {
  int code = 0;
  std::string headers;
  std::string body;
};

class ModelServerTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::FreshTestDir("model-server"); }

  void Start(const std::vector<std::string>& more = {}) {
    testing::Started server = testing::StartModelServer(
        {.task = "m", .latency_ms = "0,0,1", .more = more}, "127.0.8.1", dir_);
    ASSERT_FALSE(server.ports.empty()) << server.process->Log();
    process_ = std::move(server.process);
    port_ = server.ports[0];
  }

  // POSTs `json_text` then `binary`; with binary data, the header names the JSON's length.
  Answer Post(const std::string& json_text, const std::string& binary = "") const {
    std::ofstream(dir_ + "/body", std::ios::binary) << json_text << binary;
    const std::string header =
        binary.empty()
            ? ""
            : " -H 'Inference-Header-Content-Length: " + std::to_string(json_text.size()) + "'";
    const testing::ShellResult curl =
        testing::RunShell("curl -s -o " + dir_ + "/answer -D " + dir_ +
                          "/headers -w '%{http_code}'" + header + " --data-binary @" + dir_ +
                          "/body http://127.0.8.1:" + std::to_string(port_) + "/v2/models/m/infer");
    return {std::atoi(curl.out.c_str()), testing::ReadFile(dir_ + "/headers"),
            testing::ReadFile(dir_ + "/answer")};
  }

  std::string dir_;
  std::unique_ptr<testing::Process> process_;
  int port_ = 0;
};

constexpr const char* kBinaryX = R"({"inputs": [{"name": "x", "datatype": "INT8", "shape": [2, 3],)"
                                 R"( "parameters": {"binary_data_size": 6}}]})";

TEST_F(ModelServerTest, EchoesBinaryInputsAsBinaryOutputs) {
  Start();
  const std::string bytes("\x01\x00\xfe\x7f\x80\x02", 6);
  const Answer a = Post(kBinaryX, bytes);
  ASSERT_EQ(a.code, 200) << a.body;
  std::string lower = a.headers;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  const size_t at = lower.find("inference-header-content-length: ");
  ASSERT_NE(at, std::string::npos) << a.headers;
  const size_t json_bytes = std::stoul(a.headers.substr(at + 33));
  ASSERT_LE(json_bytes, a.body.size());
  const json header = json::parse(a.body.substr(0, json_bytes));
  EXPECT_EQ(header["outputs"][0]["name"], "output_x");
  EXPECT_EQ(header["outputs"][0]["parameters"]["binary_data_size"], 6);
  EXPECT_EQ(a.body.substr(json_bytes), bytes);
}

TEST_F(ModelServerTest, ABinaryPartOfTheWrongLengthIsRefused) {
  Start();
  const Answer short_part = Post(kBinaryX, "12345");
  EXPECT_EQ(short_part.code, 400);
  EXPECT_NE(short_part.body.find("add up to 6 bytes, the binary part holds 5"), std::string::npos)
      << short_part.body;
  const std::string wrong = testing::ReplaceFirst(kBinaryX, "INT8", "FP32");
  const Answer shape = Post(wrong, "123456");
  EXPECT_EQ(shape.code, 400);
  EXPECT_NE(shape.body.find("binary_data_size is 6 bytes"), std::string::npos) << shape.body;
}

TEST_F(ModelServerTest, MaxBodyBytesBoundsARequest) {
  Start({"--max-body-bytes", "2048"});
  const std::string data(3000, ' ');
  const Answer big = Post(R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1],)"
                          R"( "data": [1])" +
                          data + "]}");
  EXPECT_EQ(big.code, 413);
  EXPECT_NE(big.body.find("exceeds 2048 bytes"), std::string::npos) << big.body;
  EXPECT_EQ(
      Post(R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1]}]})").code,
      200);
}

// Four requests at once on a server of batch 1 taking 300 ms a batch: one is served at once and
// the others wait 300 ms and more. With the plan's queue timeout of 100 ms they are refused 503
// (the router then tries another pod or fails the request); without one, all are served.
size_t Occurrences(const std::string& text, const std::string& word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

TEST_F(ModelServerTest, TheQueueTimeoutRefusesWhatWaitedPastIt) {
  const auto codes = [&](const char* timeout) {
    if (timeout != nullptr) setenv("PIPESCALE_QUEUE_TIMEOUT_MS", timeout, 1);
    testing::Started server = testing::StartModelServer(
        {.task = "m", .latency_ms = "0,0,300", .max_wait_ms = 0}, "127.0.8.1", dir_);
    unsetenv("PIPESCALE_QUEUE_TIMEOUT_MS");
    EXPECT_FALSE(server.ports.empty()) << server.process->Log();
    const std::string url =
        "http://127.0.8.1:" + std::to_string(server.ports.empty() ? 0 : server.ports[0]) +
        "/v2/models/m/infer";
    const std::string body = R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], )"
                             R"("data": [1]}]})";
    return testing::RunShell("for i in 1 2 3 4; do curl -s -o /dev/null -w '%{http_code} ' -d '" +
                             body + "' " + url + " & done; wait")
        .out;
  };
  const std::string bounded = codes("100");
  EXPECT_EQ(Occurrences(bounded, "200"), 1u) << bounded;
  EXPECT_EQ(Occurrences(bounded, "503"), 3u) << bounded;
  const std::string unbounded = codes(nullptr);
  EXPECT_EQ(Occurrences(unbounded, "200"), 4u) << unbounded;
}

// A pod being deleted keeps serving while the routers learn of it: after SIGTERM its readiness
// fails at once, a request in flight (800 ms a batch) and one sent after the signal (by a router
// that had not yet seen the deletion) are both answered 200, and it exits once drained.
TEST_F(ModelServerTest, OnSigtermItServesWhatWasSentToItAndThenStops) {
  testing::Started server = testing::StartModelServer(
      {.task = "m", .latency_ms = "0,0,800", .max_wait_ms = 0}, "127.0.8.1", dir_);
  ASSERT_FALSE(server.ports.empty()) << server.process->Log();
  const std::string base = "http://127.0.8.1:" + std::to_string(server.ports[0]);
  const std::string infer =
      " -d '{\"inputs\": [{\"name\": \"x\", \"datatype\": \"FP32\", \"shape\": [1], "
      "\"data\": [1]}]}' " +
      base + "/v2/models/m/infer";
  const auto code_of = [&](const std::string& name) {
    return testing::ReadFile(dir_ + "/" + name);
  };
  const auto send = [&](const std::string& name) {
    const std::string file = dir_ + "/" + name;
    testing::RunShell("(curl -s -o /dev/null -w '%{http_code}' " + infer + " > " + file +
                      ".tmp && mv " + file + ".tmp " + file + ") > /dev/null 2>&1 &");
  };
  const auto ready = [&] {
    return testing::RunShell("curl -s -o /dev/null -w '%{http_code}' " + base + "/v2/health/ready")
        .out;
  };
  ASSERT_EQ(ready(), "200");
  send("before");
  ASSERT_EQ(kill(server.process->pid(), SIGTERM), 0);
  EXPECT_TRUE(testing::Eventually([&] { return ready() == "400"; }, std::chrono::seconds(5)));
  send("after");
  EXPECT_TRUE(testing::Eventually([&] { return !code_of("after").empty(); }));
  EXPECT_EQ(code_of("before"), "200");
  EXPECT_EQ(code_of("after"), "200");
  EXPECT_EQ(server.process->Stop(0, std::chrono::seconds(10)), 0) << server.process->Log();
}

}  // namespace
}  // namespace pipescale
