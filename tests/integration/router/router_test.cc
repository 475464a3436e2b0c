// pipescale-router in front of real model servers (processes of ours on loopback addresses):
// it serves a path, names what is wrong with a bad request, retries a failed pod once on
// another, answers 504 rather than late, and drains on SIGTERM. No cluster: the endpoints are
// given on the command line.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "integration/harness/loopback.h"
#include "integration/harness/process.h"
#include "integration/harness/test_dir.h"
#include "integration/harness/wait.h"
#include "support/shell.h"
#include "support/text.h"

namespace pipescale {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::Process;
using namespace std::chrono_literals;

// Built with ASan (the sanitizer tests' build): memory is what those runs check, not latency.
#ifdef __SANITIZE_ADDRESS__
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// The value of the first series in `text` (Prometheus's text format) whose line begins with
// `series`, -1 when none does.
double FirstValue(const std::string& text, const std::string& series) {
  const size_t at = text.find(series);
  const size_t space = at == std::string::npos ? at : text.find(' ', at);
  return space == std::string::npos ? -1.0 : std::stod(text.substr(space + 1));
}

struct Reply {
  int code = 0;
  json body;           // the JSON (the header's part, when the answer carries binary data)
  std::string binary;  // the binary data after it (the binary extension), or ""
  std::string headers;
  double seconds = 0;

  // The answer's value of HTTP header `name` (as written in lower case), or "".
  std::string Header(const std::string& name) const {
    std::string lower = headers;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    const size_t at = lower.find("\n" + name + ":");
    if (at == std::string::npos) return "";
    const size_t from = headers.find_first_not_of(' ', at + name.size() + 2);
    return headers.substr(from, headers.find_first_of("\r\n", from) - from);
  }
};

// A request in the binary data extension: its JSON, then `binary`, told apart by the
// Inference-Header-Content-Length header (`header_length` when given, else the JSON's length).
struct BinaryRequest {
  std::string json_text;
  std::string binary;
  std::string header_length;

  std::vector<std::string> Headers() const {
    const std::string length =
        header_length.empty() ? std::to_string(json_text.size()) : header_length;
    return {"Inference-Header-Content-Length: " + length, "Content-Type: application/octet-stream"};
  }
};

// detect -> classify, each on one CPU class, on path p with `slo_ms`; classify's variants as given.
std::string ChainPipeline(double slo_ms,
                          const std::string& classify_variants =
                              "[{name: v, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: "
                              "{c: 5}}}]}]") {
  return R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: chain, namespace: demo}
spec:
  hardwareClasses: [{name: cpu}]
  tasks:
    - {name: detect, next: [{task: classify}], variants: [{name: v, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {c: 5}}}]}]}
    - {name: classify, variants: )" +
         classify_variants + R"(}
  paths: [{name: p, tasks: [detect, classify], sloMs: )" +
         std::to_string(slo_ms) + "}]\n";
}

class RouterTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::FreshTestDir("router"); }

  // A model server for `task` on its own loopback address, batching up to `batch` requests
  // and waiting at most `max_wait_ms` for a batch to fill; its ip:port.
  std::string Model(const std::string& task, const std::string& latency_ms, int batch = 1,
                    int max_wait_ms = 1000) {
    const std::string host = "127.0.7." + std::to_string(++hosts_);
    testing::Started server = testing::StartModelServer(
        {.task = task, .latency_ms = latency_ms, .batch = batch, .max_wait_ms = max_wait_ms}, host,
        dir_);
    EXPECT_FALSE(server.ports.empty()) << server.process->Log();
    processes_.push_back(std::move(server.process));
    return host + ":" + (server.ports.empty() ? "0" : std::to_string(server.ports[0]));
  }

  // Writes `pipeline_`, else the two-task chain with `slo_ms` on its path, to pipeline.yaml.
  void WritePipeline(double slo_ms) const {
    if (!pipeline_.empty()) {
      std::ofstream(dir_ + "/pipeline.yaml") << pipeline_;
    } else {
      std::ofstream(dir_ + "/pipeline.yaml") << ChainPipeline(slo_ms);
    }
  }

  void StartRouter(const std::string& endpoints, double slo_ms = 400,
                   const std::string& drain_seconds = "5",
                   const std::vector<std::string>& more = {}) {
    WritePipeline(slo_ms);
    std::vector<std::string> flags = {"--threads", "2", "--drain-seconds", drain_seconds};
    flags.insert(flags.end(), more.begin(), more.end());
    testing::Started router = testing::StartRouter(dir_ + "/pipeline.yaml", endpoints, flags, dir_);
    router_ = std::move(router.process);
    ASSERT_EQ(router.ports.size(), 2u) << router_->Log();
    port_ = router.ports[0];
    metrics_port_ = router.ports[1];
  }

  Reply Infer(const std::string& body, const std::string& path = "p",
              const std::vector<std::string>& headers = {}) const {
    const std::string file = dir_ + "/request.json";
    std::ofstream(file, std::ios::binary) << body;
    std::string more;
    for (const std::string& h : headers) more += " -H '" + h + "'";
    const auto start = std::chrono::steady_clock::now();
    const testing::ShellResult curl = testing::RunShell(
        "curl -s -o " + dir_ + "/reply.json -D " + dir_ + "/headers -w '%{http_code}' " +
        "-H 'x-pipescale-path: " + path + "'" + more + " --data-binary @" + file +
        " http://127.0.0.1:" + std::to_string(port_) + "/v2/models/chain/infer");
    Reply r;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.code = std::atoi(curl.out.c_str());
    r.headers = testing::ReadFile(dir_ + "/headers");
    std::string text = testing::ReadFile(dir_ + "/reply.json");
    if (const std::string length = r.Header("inference-header-content-length"); !length.empty()) {
      r.binary = text.substr(std::min(text.size(), std::stoul(length)));
      text.resize(text.size() - r.binary.size());
    }
    r.body = json::parse(text, nullptr, false);
    return r;
  }

  Reply Infer(const BinaryRequest& request) const {
    return Infer(request.json_text + request.binary, "p", request.Headers());
  }

  std::string Metrics() const { return testing::HttpGet(metrics_port_, "/metrics").second; }
  // The value of the router's first series that begins with `series`, -1 when it has none.
  double Metric(const std::string& series) const { return FirstValue(Metrics(), series); }

  // Runs the load generator (Poisson arrivals at `trace`, query sizes from the pipeline's
  // querySizes) against the router to its end; its report.
  json Load(const std::string& trace) const {
    Process load({PIPESCALE_LOADGEN, "-f", dir_ + "/pipeline.yaml", "--trace", trace, "--router",
                  "127.0.0.1:" + std::to_string(port_), "--report", dir_ + "/report.json"},
                 dir_ + "/loadgen.log");
    EXPECT_EQ(load.Stop(0, 60s), 0) << load.Log();
    return json::parse(testing::ReadFile(dir_ + "/report.json"), nullptr, false);
  }

  static constexpr const char* kRequest =
      R"({"id": "r", "inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]}]})";

  std::string dir_;
  std::string pipeline_;  // the router's pipeline, when not the default chain
  int hosts_ = 0;
  int port_ = 0, metrics_port_ = 0;
  std::vector<std::unique_ptr<Process>> processes_;
  std::unique_ptr<Process> router_;
};

TEST_F(RouterTest, ServesAPathAndMeasuresIt) {
  StartRouter("detect=" + Model("detect", "0,0,5") + ";classify=" + Model("classify", "0,0,5"));
  for (int i = 0; i < 20; ++i) {
    const Reply r = Infer(kRequest);
    ASSERT_EQ(r.code, 200) << r.body.dump();
    EXPECT_EQ(r.body["id"], "r");
    EXPECT_EQ(r.body["outputs"][0]["data"], json::parse("[1, 2]"));
    EXPECT_EQ(r.body["parameters"]["pipescale_paths"], json::parse(R"(["p"])"));
  }
  const std::string m = Metrics();
  EXPECT_NE(
      m.find(
          R"(pipescale_requests_total{code="200",namespace="demo",path="p",pipeline="chain"} 20)"),
      std::string::npos)
      << m;
  EXPECT_NE(
      m.find(
          R"(pipescale_request_duration_seconds_count{namespace="demo",path="p",pipeline="chain"} 20)"),
      std::string::npos);
  EXPECT_NE(
      m.find(
          // Endpoints from the command line name no variant.
          R"(pipescale_router_task_requests_total{code="200",namespace="demo",pipeline="chain",task="classify",variant=""} 20)"),
      std::string::npos);
  // The model servers report how long each call waited for its batch: the router splits each
  // call's time into that and the rest, which for 5 ms batches on idle servers is most of it.
  const std::string labels = R"({namespace="demo",pipeline="chain",task="detect",variant=""})";
  auto value = [&](const std::string& series) { return FirstValue(m, series + labels + " "); };
  EXPECT_EQ(value("pipescale_router_task_queue_seconds_count"), 20) << m;
  const double queue = value("pipescale_router_task_queue_seconds_sum");
  const double service = value("pipescale_router_task_service_seconds_sum");
  EXPECT_GE(queue, 0);
  EXPECT_GE(service, 20 * 0.005);
  EXPECT_NEAR(queue + service, value("pipescale_router_task_duration_seconds_sum"), 1e-6);
}

// The server is ready while a task has no pod (its requests are demand the operator must see);
// the pipeline's model is ready only when every task has one, and says which has not.
TEST_F(RouterTest, TheModelIsReadyWhenEveryTaskHasAPod) {
  StartRouter("detect=" + Model("detect", "0,0,5"));
  EXPECT_EQ(testing::HttpGet(port_, "/v2/health/ready").first, 200);
  const auto waiting = testing::HttpGet(port_, "/v2/models/chain/ready");
  EXPECT_EQ(waiting.first, 503);
  EXPECT_NE(waiting.second.find("task classify has no Ready pod yet"), std::string::npos)
      << waiting.second;
  router_->Stop(SIGTERM, 10s);
  StartRouter("detect=" + Model("detect", "0,0,5") + ";classify=" + Model("classify", "0,0,5"));
  EXPECT_EQ(testing::HttpGet(port_, "/v2/models/chain/ready").first, 200);
}

TEST_F(RouterTest, ABadRequestIsToldWhatIsWrong) {
  StartRouter("detect=" + Model("detect", "0,0,5") + ";classify=" + Model("classify", "0,0,5"));
  const Reply malformed =
      Infer(R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [3], "data": [1]}]})");
  EXPECT_EQ(malformed.code, 400);
  EXPECT_EQ(malformed.body["error"], "inputs[0].data: holds 1 elements, the shape says 3");
  const Reply unknown = Infer(kRequest, "nowhere");
  EXPECT_EQ(unknown.code, 404);
  EXPECT_NE(unknown.body.value("error", "").find("nowhere"), std::string::npos);
  EXPECT_EQ(Infer("not json").code, 400);
  EXPECT_TRUE(router_->Running());
}

// A body past --max-body-bytes is answered 413 naming the limit, before the router reads it
// whole; one within it is served, and the process lives on.
TEST_F(RouterTest, ABodyPastTheLimitIsRefusedWith413) {
  StartRouter("detect=" + Model("detect", "0,0,5") + ";classify=" + Model("classify", "0,0,5"), 400,
              "5", {"--max-body-bytes", "2048"});
  std::string data = "0";
  for (int i = 1; i < 1000; ++i) data += ",0";
  const std::string big = R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1000], )"
                          R"("data": [)" +
                          data + "]}]}";
  const Reply refused = Infer(big);
  EXPECT_EQ(refused.code, 413);
  EXPECT_EQ(refused.body["error"], "the request body is larger than 2048 bytes");
  EXPECT_EQ(Infer(kRequest).code, 200);
  EXPECT_TRUE(router_->Running());
}

// Four FP32 numbers as the binary extension carries them (little-endian, as this machine).
std::string Fp32Bytes(const std::vector<float>& values) {
  std::string out(values.size() * sizeof(float), '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// A tensor sent as binary data goes through both tasks untouched and comes back binary, in the
// order of the outputs that name its size; a JSON input of the same request is answered in binary
// too (every task was asked for binary outputs). Bytes no JSON text could hold (a NUL, 0xff) pass.
TEST_F(RouterTest, BinaryTensorsPassThroughTheChainUntouched) {
  StartRouter("detect=" + Model("detect", "0,0,5") + ";classify=" + Model("classify", "0,0,5"));
  const std::string bytes = std::string("\0\xff\x7f\x80", 4) + Fp32Bytes({1.5F, -2, 1e30F});
  const BinaryRequest request{
      .json_text = R"({"id": "b", "inputs": [)"
                   R"({"name": "x", "datatype": "FP32", "shape": [1, 4],)"
                   R"( "parameters": {"binary_data_size": 16}},)"
                   R"({"name": "y", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]}]})",
      .binary = bytes};
  const Reply r = Infer(request);
  ASSERT_EQ(r.code, 200) << r.body.dump() << r.headers;
  EXPECT_EQ(r.body["id"], "b");
  ASSERT_EQ(r.body["outputs"].size(), 2u) << r.body.dump();
  const json& x = r.body["outputs"][0];
  EXPECT_EQ(x["name"], "classify/output_output_x");
  EXPECT_EQ(x["parameters"]["binary_data_size"], 16);
  EXPECT_FALSE(x.contains("data"));
  EXPECT_EQ(r.body["outputs"][1]["parameters"]["binary_data_size"], 8);
  EXPECT_EQ(r.binary, bytes + Fp32Bytes({1, 2}));
  EXPECT_EQ(r.Header("content-type"), "application/octet-stream");
}

// A JSON request that asks for binary outputs gets them; one that does not stays all JSON.
TEST_F(RouterTest, AJsonRequestIsAnsweredInBinaryOnlyWhenItAsks) {
  StartRouter("detect=" + Model("detect", "0,0,5") + ";classify=" + Model("classify", "0,0,5"));
  const Reply asked =
      Infer(R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [3, 4]}],)"
            R"( "parameters": {"binary_data_output": true}})");
  ASSERT_EQ(asked.code, 200) << asked.body.dump();
  EXPECT_EQ(asked.binary, Fp32Bytes({3, 4}));
  EXPECT_EQ(asked.body["outputs"][0]["parameters"]["binary_data_size"], 8);
  const Reply plain = Infer(kRequest);
  ASSERT_EQ(plain.code, 200);
  EXPECT_EQ(plain.Header("inference-header-content-length"), "");
  EXPECT_EQ(plain.body["outputs"][0]["data"], json::parse("[1, 2]"));
}

// A binary part that disagrees with the sizes its tensors name, a size that disagrees with the
// shape, or a header length past the body: 400 naming what disagrees, before any model is called.
TEST_F(RouterTest, ABinaryPartThatDisagreesWithItsHeaderIsRefused) {
  StartRouter("detect=" + Model("detect", "0,0,5") + ";classify=" + Model("classify", "0,0,5"));
  const std::string json_text = R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 4],)"
                                R"( "parameters": {"binary_data_size": 16}}]})";
  const Reply short_part =
      Infer(BinaryRequest{.json_text = json_text, .binary = "0123456789abcde"});
  EXPECT_EQ(short_part.code, 400);
  EXPECT_EQ(short_part.body.value("error", ""),
            "inputs: their binary_data_size add up to 16 bytes, but the body's binary part (past "
            "its Inference-Header-Content-Length) holds 15");
  const Reply long_part =
      Infer(BinaryRequest{.json_text = json_text, .binary = "0123456789abcdef!"});
  EXPECT_EQ(long_part.code, 400);
  const Reply past_body = Infer(
      BinaryRequest{.json_text = json_text, .binary = "0123456789abcdef", .header_length = "9999"});
  EXPECT_EQ(past_body.code, 400);
  EXPECT_NE(past_body.body.value("error", "").find("Inference-Header-Content-Length: must be"),
            std::string::npos)
      << past_body.body.dump();
  const std::string wrong_shape = testing::ReplaceFirst(json_text, "[1, 4]", "[1, 3]");
  const Reply shape = Infer(BinaryRequest{.json_text = wrong_shape, .binary = "0123456789abcdef"});
  EXPECT_EQ(shape.code, 400);
  EXPECT_EQ(shape.body.value("error", ""),
            "inputs[0].parameters.binary_data_size: is 16 bytes; 3 FP32 elements take 12");
  // Nothing was sent on: the models were never called with what the router refused.
  EXPECT_EQ(Metrics().find(R"(pipescale_router_task_requests_total{code="200")"),
            std::string::npos);
  EXPECT_TRUE(router_->Running());
}

// A flag out of its range is named at start, not found by the first large request.
TEST_F(RouterTest, AMaxBodyBytesOutOfRangeIsRefusedAtStart) {
  WritePipeline(400);
  for (const char* bad : {"12", "4MiB", "2147483648"}) {
    Process router(
        {PIPESCALE_ROUTER, "--pipeline-file", dir_ + "/pipeline.yaml", "--max-body-bytes", bad},
        dir_ + "/bad-flag.log");
    EXPECT_EQ(router.Stop(0, 10s), 2) << bad;
    EXPECT_NE(router.Log().find("--max-body-bytes: needs an integer in [1024, 1073741824], got"),
              std::string::npos)
        << router.Log();
  }
}

// One of two detect pods dies: every request still succeeds, the failures retried once on
// the other pod; with no detect pod left, 502 names the task.
TEST_F(RouterTest, AFailedPodIsRetriedOnceOnAnotherThenTheTaskIsNamed) {
  processes_.reserve(3);
  const std::string a = Model("detect", "0,0,5");
  const std::string b = Model("detect", "0,0,5");
  StartRouter("detect=" + a + "," + b + ";classify=" + Model("classify", "0,0,5"));
  ASSERT_EQ(Infer(kRequest).code, 200);
  processes_[0]->Stop(SIGKILL, 5s);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(Infer(kRequest).code, 200) << i;
  EXPECT_NE(
      Metrics().find(
          "pipescale_router_retries_total{namespace=\"demo\",pipeline=\"chain\",task=\"detect\"}"),
      std::string::npos);
  processes_[1]->Stop(SIGKILL, 5s);
  const Reply failed = Infer(kRequest);
  EXPECT_EQ(failed.code, 502);
  EXPECT_NE(failed.body.value("error", "").find("task detect"), std::string::npos) << failed.body;
}

// A model server's own metric (its first series), -1 when it has none.
double ModelMetric(const std::string& address, const std::string& name) {
  return FirstValue(testing::RunShell("curl -s http://" + address + "/metrics").out, name + "{");
}

// Requests a model server at `address` has served, by its own count.
double Served(const std::string& address) {
  return ModelMetric(address, "pipescale_model_requests_total");
}

// A pod that hangs (SIGSTOP: a frozen node) costs one request the half of its budget it waited,
// once: the pod is then left out of picks and comes back only by answering a readiness probe, so
// no request waits on it again however long it stays hung (without the probe, the calls after
// the first ejection's 5 s and the second's 10 s would each pay again). Running again, it serves.
TEST_F(RouterTest, AHungPodIsLeftOutUntilItAnswersAProbe) {
  processes_.reserve(3);
  const std::string a = Model("detect", "0,0,5");
  const std::string b = Model("detect", "0,0,5");
  // As the operator's discovery gives them: with the variant and class whose d(b) they serve.
  StartRouter("detect=" + a + "@v/cpu/1," + b + "@v/cpu/1;classify=" + Model("classify", "0,0,5"),
              400);
  ASSERT_EQ(Infer(kRequest).code, 200);
  const std::string ejections =
      R"(pipescale_router_ejections_total{namespace="demo",pipeline="chain",task="detect"})";
  const double served = Served(a);
  ASSERT_EQ(kill(processes_[0]->pid(), SIGSTOP), 0);
  EXPECT_TRUE(Eventually(
      [&] {
        EXPECT_EQ(Infer(kRequest).code, 200);
        return Metric(ejections) >= 1;
      },
      30s, 0ms));
  for (const auto end = std::chrono::steady_clock::now() + 16s;
       std::chrono::steady_clock::now() < end;) {
    EXPECT_EQ(Infer(kRequest).code, 200);
  }
  EXPECT_EQ(Metric(ejections), 1) << Metrics();
  ASSERT_EQ(kill(processes_[0]->pid(), SIGCONT), 0);
  // The call it hung on may be served now; a second one only after a probe let it back.
  EXPECT_TRUE(Eventually(
      [&] {
        EXPECT_EQ(Infer(kRequest).code, 200);
        return Served(a) >= served + 2;
      },
      60s, 0ms));
}

// A frozen node silences each of its pods at once (detect's and classify's here): the first call
// one of them leaves unanswered makes the others on its node suspect, probed before any call
// waits on them, so one request pays a give-up (a retry and an ejection), not one at each task
// (without the rule, every run had two). Pods on the other node keep serving. Counted by the
// router, not timed: beside CI's other tests a 5 ms call may take 200 ms without a give-up.
TEST_F(RouterTest, APodThatHangsMakesItsNodesOtherPodsSuspect) {
  processes_.reserve(4);
  const std::string a = Model("detect", "0,0,5"), c = Model("classify", "0,0,5");
  const std::string b = Model("detect", "0,0,5"), d = Model("classify", "0,0,5");
  // A give-up on a live pod would come at half the budget: the ASan build's calls take longer.
  StartRouter("detect=" + a + "@v/cpu/1/n1," + b + "@v/cpu/1/n2;classify=" + c + "@v/cpu/1/n1," +
                  d + "@v/cpu/1/n2",
              kSanitized ? 2000 : 400);
  ASSERT_EQ(Infer(kRequest).code, 200);
  for (const int frozen : {0, 1}) ASSERT_EQ(kill(processes_[frozen]->pid(), SIGSTOP), 0);
  for (int i = 0; i < 40; ++i) {
    const Reply r = Infer(kRequest);
    EXPECT_EQ(r.code, 200) << r.body;
  }
  // Both tasks' count of `name`.
  const auto total = [&](const std::string& name) {
    double sum = 0;
    for (const std::string task : {"detect", "classify"}) {
      sum += std::max(0.0, Metric("pipescale_router_" + name + R"({namespace="demo",)" +
                                  R"(pipeline="chain",task=")" + task + "\"}"));
    }
    return sum;
  };
  EXPECT_EQ(total("retries_total"), 1) << Metrics();
  EXPECT_EQ(total("ejections_total"), 1) << Metrics();
  for (const int frozen : {0, 1}) ASSERT_EQ(kill(processes_[frozen]->pid(), SIGCONT), 0);
}

// classify takes 3 s against a 200 ms SLO: the client hears 504 by the deadline (plus a 50 ms
// grace), not when classify ends. Told by the order of events, not by how fast this machine
// runs: the client's 504 comes while classify's server is still on the call (it counts a request
// when its batch ends), which it then finishes; and not before the deadline.
TEST_F(RouterTest, ARequestThatCannotMakeItsDeadlineIsAnsweredByIt) {
  const std::string classify = Model("classify", "0,0,3000");
  StartRouter("detect=" + Model("detect", "0,0,5") + ";classify=" + classify, 200);
  const Reply late = Infer(kRequest);
  EXPECT_EQ(late.code, 504) << late.body;
  EXPECT_EQ(Served(classify), 0) << "the answer waited for classify";
  EXPECT_GE(late.seconds, 0.2);  // a loaded machine only adds to it
  // The call was made and was running: its server ends it after the answer.
  EXPECT_TRUE(Eventually([&] { return Served(classify) == 1; }, 20s, 50ms));
  EXPECT_NE(Metrics().find("pipescale_router_deadline_exceeded_total{namespace=\"demo\",path=\"p\","
                           "pipeline=\"chain\"} 1"),
            std::string::npos)
      << Metrics();
}

// SIGTERM while a request is in flight: the router drains. For the drain window it still serves
// what clients send (their discovery has not caught up yet), reports not ready and closes each
// connection after its answer; the request in flight is answered; then it exits 0.
TEST_F(RouterTest, SigtermDrainsWithoutLosingARequest) {
  StartRouter("detect=" + Model("detect", "0,0,400") + ";classify=" + Model("classify", "0,0,5"),
              2000, "1");
  Reply slow;
  std::thread client([&] { slow = Infer(kRequest); });
  // The signal comes while the request is at detect (400 ms a call).
  EXPECT_TRUE(Eventually(
      [&] {
        return Metrics().find(
                   "pipescale_router_task_in_flight_requests{namespace=\"demo\","
                   "pipeline=\"chain\",task=\"detect\"} 1") != std::string::npos;
      },
      10s, 5ms))
      << Metrics();
  ASSERT_EQ(kill(router_->pid(), SIGTERM), 0);
  // Within the drain window (1 s) the router says it is not ready, and serves on.
  EXPECT_TRUE(Eventually([&] { return testing::HttpGet(port_, "/v2/health/ready").first == 503; },
                         1s, 5ms));
  const Reply after = Infer(kRequest);
  EXPECT_EQ(after.code, 200) << after.body;
  EXPECT_NE(after.headers.find("Connection: close"), std::string::npos) << after.headers;
  client.join();
  EXPECT_EQ(slow.code, 200) << slow.body;
  EXPECT_EQ(router_->Stop(SIGTERM, 10s), 0) << router_->Log();
}

// A Loki plan's routing.json: after detect, a share `b7` of classify's requests goes to b7 and
// the rest to b0, the faster backup with room left. (The plan's budgets are not the router's:
// it predicts from the pods' queues.)
std::string LokiRouting(double b7) {
  const json to_classify = {{{"variant", "b7"}, {"fraction", b7}},
                            {{"variant", "b0"}, {"fraction", 1 - b7}}};
  return json{{"phase", "AccuracyScaling"},
              {"tables",
               {{{"path", "p"},
                 {"task", "detect"},
                 {"from", ""},
                 {"to", {{{"variant", "v"}, {"fraction", 1}}}}},
                {{"path", "p"}, {"task", "classify"}, {"from", "v"}, {"to", to_classify}}}},
              {"backups", {{{"task", "classify"}, {"variant", "b0"}, {"spareRps", 50}}}},
              {"budgetsMs", {{"detect/v", 15}, {"classify/b7", 60}, {"classify/b0", 10}}}}
      .dump();
}

// The chain with two variants of classify, b7 declared at `b7_ms` a batch and b0 at 2 ms.
std::string TwoVariantChain(double b7_ms) {
  return ChainPipeline(
      400,
      "[{name: b7, accuracy: 0.9, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {c: " +
          std::to_string(b7_ms) +
          "}}}]}, {name: b0, accuracy: 0.7, profiles: [{hardwareClass: cpu, latencyMs: "
          "{quadratic: {c: 2}}}]}]");
}

// Loki's MostAccurateFirst tables decide which variant's pods serve: the model servers' own
// counts split as the table says, within 4 standard deviations of 300 draws (0.09).
TEST_F(RouterTest, LokisTablesSplitRequestsAcrossVariants) {
  pipeline_ = TwoVariantChain(2);
  std::ofstream(dir_ + "/routing.json") << LokiRouting(0.8);
  const std::string b7 = Model("classify", "0,0,2"), b0 = Model("classify", "0,0,2");
  StartRouter("detect=" + Model("detect", "0,0,2") + "@v;classify=" + b7 + "@b7," + b0 + "@b0", 400,
              "5", {"--routing-file", dir_ + "/routing.json"});
  const int n = 300;
  for (int i = 0; i < n; ++i) ASSERT_EQ(Infer(kRequest).code, 200);
  EXPECT_NEAR(Served(b7) / n, 0.8, 0.09);
  EXPECT_NEAR(Served(b0) / n, 0.2, 0.09);
  EXPECT_EQ(Served(b7) + Served(b0), n);
}

// The pipeline declares b7 at 500 ms a batch (its servers here answer in 2), more than the 400 ms
// SLO leaves after detect: rerouting sends every request the table plans for b7 to b0, the most
// accurate variant still in time, counted; per-task dropping answers 504 instead, before classify
// is called. The router predicts from the declared profile and the pods' queues, not from what
// the task before took.
TEST_F(RouterTest, ARequestThePlannedVariantWouldServeLateIsReroutedOrDropped) {
  pipeline_ = TwoVariantChain(500);
  std::ofstream(dir_ + "/routing.json") << LokiRouting(1);
  const std::string b7 = Model("classify", "0,0,2"), b0 = Model("classify", "0,0,2");
  const std::string endpoints = "detect=" + Model("detect", "0,0,5") + "@v/cpu/1;classify=" + b7 +
                                "@b7/cpu/1," + b0 + "@b0/cpu/1";
  StartRouter(endpoints, 400, "5", {"--routing-file", dir_ + "/routing.json"});
  for (int i = 0; i < 20; ++i) ASSERT_EQ(Infer(kRequest).code, 200);
  EXPECT_EQ(Served(b7), 0);
  EXPECT_EQ(Served(b0), 20);
  EXPECT_NE(Metrics().find(R"(pipescale_router_reroutes_total{namespace="demo",pipeline="chain",)"
                           R"(task="classify",variant="b0"} 20)"),
            std::string::npos)
      << Metrics();
  ASSERT_EQ(router_->Stop(SIGTERM, 10s), 0);
  StartRouter(endpoints, 400, "1",
              {"--routing-file", dir_ + "/routing.json", "--drop-policy", "per-task"});
  const Reply dropped = Infer(kRequest);
  EXPECT_EQ(dropped.code, 504);
  EXPECT_NE(dropped.body.value("error", "").find("per-task budget"), std::string::npos)
      << dropped.body;
  EXPECT_EQ(Served(b0) + Served(b7), 20);  // the dropped request reached no classify pod
}

// One task on a fast class (gpu: 8 ms + 4 ms per row), a class quick on small queries only
// (`cpu`, by default 4 ms + 1.6 ms per row squared) and a burst class (20 ms); queries of
// `sizes`, each within the batch a server accepts.
std::string PoolPipeline(
    const std::string& cpu = "{a: 1.6, c: 4}",
    const std::string& sizes = "[{size: 1, weight: 1}, {size: 10, weight: 1}]") {
  return R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: chain, namespace: demo}
spec:
  hardwareClasses: [{name: gpu}, {name: cpu}, {name: burst}]
  querySizes: )" +
         sizes + R"(
  tasks:
    - name: classify
      variants:
        - name: v
          batchSize: {max: 16}
          profiles:
            - {hardwareClass: gpu, latencyMs: {quadratic: {b: 4, c: 8}}}
            - {hardwareClass: cpu, latencyMs: {quadratic: )" +
         cpu + R"(}}
            - {hardwareClass: burst, latencyMs: {quadratic: {c: 20}}}
  paths: [{name: p, tasks: [classify], sloMs: 400}]
)";
}

// Kairos's pools.json for that task: C(cpu) = 48 / 164, the largest query on each class; a
// 10-row query takes 164 ms on the cpu, past 0.98 x the 120 ms QoS, a 1-row one 5.6 ms. (Times
// long enough that a loaded machine's jitter does not make queries late.)
std::string KairosPools() {
  return json{{"optimizer", "kairos"},
              {"pools",
               {{{"task", "classify"},
                 {"qosMs", 120},
                 {"members",
                  {{{"hardwareClass", "gpu"},
                    {"replicas", 1},
                    {"maxQuery", 10},
                    {"coefficient", 1},
                    {"capacityRps", 150}},
                   {{"hardwareClass", "cpu"},
                    {"replicas", 1},
                    {"maxQuery", 10},
                    {"coefficient", 0.29},
                    {"capacityRps", 40}}}}}}}}
      .dump();
}

// Under Kairos's matcher each replica holds one query at a time: every batch its model server
// ran held one request, though the servers batch up to 8 and the load overlaps (without the
// pools the same load makes batches of several). And the matcher sends the 10-row queries to
// the gpu and the 1-row ones to the cpu, where first come first served mixes them: the rows
// per request each class served are within 1.5 of the all-or-nothing split (10 and 1) under
// the matcher, and not under first come first served.
TEST_F(RouterTest, KairosRunsOneQueryPerReplicaAndSendsBigQueriesToTheFastClass) {
  pipeline_ = PoolPipeline();
  std::ofstream(dir_ + "/pools.json") << KairosPools();
  // A Kairos replica serves a query as one batch at once: its server waits for nothing more.
  const std::string gpu = Model("classify", "0,4,8", 8, 0);
  const std::string cpu = Model("classify", "1.6,0,4", 8, 0);
  const std::string endpoints = "classify=" + gpu + "@v/gpu/8," + cpu + "@v/cpu/8";
  const auto rows_per_request = [](const std::string& address, double rows0, double served0) {
    return (ModelMetric(address, "pipescale_model_rows_total") - rows0) /
           (Served(address) - served0);
  };
  for (const std::string dispatch : {"matching", "fcfs"}) {
    const double gpu_rows = ModelMetric(gpu, "pipescale_model_rows_total"), gpu_n = Served(gpu);
    const double cpu_rows = ModelMetric(cpu, "pipescale_model_rows_total"), cpu_n = Served(cpu);
    StartRouter(endpoints, 400, "0",
                {"--pools-file", dir_ + "/pools.json", "--pool-dispatch", dispatch});
    const json report = Load("15:6");
    EXPECT_GT(report["paths"]["p"]["codes"].value("200", 0), 60) << report;
    SCOPED_TRACE(dispatch);
    for (const std::string& server : {gpu, cpu}) {
      EXPECT_EQ(ModelMetric(server, "pipescale_model_batch_size_sum"),
                ModelMetric(server, "pipescale_model_batch_size_count"));
    }
    const double on_gpu = rows_per_request(gpu, gpu_rows, gpu_n);
    const double on_cpu = rows_per_request(cpu, cpu_rows, cpu_n);
    std::cerr << dispatch << ": rows per request on the gpu " << on_gpu << ", on the cpu " << on_cpu
              << "; p99 " << report["paths"]["p"].value("p99Ms", 0.0) << " ms\n";
    if (dispatch == "matching") {
      EXPECT_GT(on_gpu, 8.5);
      EXPECT_LT(on_cpu, 2.5);
    } else {
      EXPECT_LT(on_gpu, 8.5);
      EXPECT_GT(on_cpu, 2.5);
    }
    ASSERT_EQ(router_->Stop(SIGTERM, 10s), 0);
  }
  StartRouter(endpoints, 400, "0");  // no pools: the power of two choices, calls overlap
  Load("15:6");
  EXPECT_GT(ModelMetric(gpu, "pipescale_model_batch_size_sum") +
                ModelMetric(cpu, "pipescale_model_batch_size_sum"),
            ModelMetric(gpu, "pipescale_model_batch_size_count") +
                ModelMetric(cpu, "pipescale_model_batch_size_count"));
}

// The door judges a query under Kairos's matcher by its own rows, as a replica runs it alone: a
// cpu pool whose server batches up to 16 (d(16) = 414 ms, past the 400 ms SLO) lets in every
// 1-row query (5.6 ms). Judged by the pod's batch, as before, each was refused as late.
TEST_F(RouterTest, KairosDoorJudgesAQueryByItsOwnRows) {
  pipeline_ = PoolPipeline("{a: 1.6, c: 4}", "[{size: 1, weight: 1}]");
  std::ofstream(dir_ + "/pools.json") << KairosPools();
  const std::string cpu = Model("classify", "1.6,0,4", 16, 0);
  StartRouter("classify=" + cpu + "@v/cpu/16", 400, "0", {"--pools-file", dir_ + "/pools.json"});
  const json report = Load("10:3");
  const json& path = report["paths"]["p"];
  EXPECT_GT(path.value("sent", 0), 10) << report;
  // A replica whose query runs late on a loaded machine can fill the pool's queue (two per
  // replica): Kairos drops what arrives then, which is not the door's doing.
  const std::string m = Metrics();
  EXPECT_EQ(testing::ExposedSum(m, "pipescale_router_shed_total", ""), 0) << m;
  const double full = testing::ExposedSum(m, "pipescale_router_drops_total", "pool queue full");
  EXPECT_LE(full, 2) << m;
  EXPECT_EQ(path["codes"].value("200", 0) + full, path.value("sent", 0)) << report;
}

// MArk's bouncer: the main class (one 20 ms replica) takes a request while it can answer within
// the 50 ms limit, i.e. with at most one ahead of it; past that the warm burst replica does.
// At 70 requests/s (main alone serves 50) with spill the SLO holds for at least 97% and every
// spilled request was served by the burst replica; without spill the queue grows past the SLO.
// At 5 requests/s (a tenth of what main serves) a spill needs two requests ahead within 40 ms:
// rare under Poisson arrivals, not impossible (and likelier on a loaded machine): at most two.
TEST_F(RouterTest, MarkSpillsToTheBurstClassOnlyWhenEveryMainReplicaWouldBeLate) {
  pipeline_ = PoolPipeline("{c: 20}", "[{size: 1, weight: 1}]");
  std::ofstream(dir_ + "/pools.json") << json{
      {"optimizer", "mark"},
      {"pools",
       {{{"task", "classify"},
         {"qosMs", 50},
         {"spillClass", "burst"},
         {"members",
          {{{"hardwareClass", "cpu"},
            {"replicas", 1},
            {"maxQuery", 1},
            {"coefficient", 1},
            {"capacityRps", 50}}}}}}}}.dump();
  const std::string main = Model("classify", "0,0,20"), burst = Model("classify", "0,0,20");
  const std::string endpoints = "classify=" + main + "@v/cpu/1," + burst + "@v/burst/1";
  const auto spills = [&] { return Metric("pipescale_router_spills_total{"); };
  StartRouter(endpoints, 400, "0", {"--pools-file", dir_ + "/pools.json"});
  Load("5:3");
  EXPECT_GE(spills(), 0);  // -1: the router exports no spill counter
  EXPECT_LE(spills(), 2);
  EXPECT_EQ(spills(), Served(burst));
  const double light = spills();
  const json with = Load("70:4");
  EXPECT_GT(spills(), light + 5);
  EXPECT_EQ(spills(), Served(burst));
  // The SLO held only where the router runs at its own speed (not under ASan beside CI's
  // cluster tests, as for the batching test below); the spills are checked in both builds.
  if (!kSanitized) {
    EXPECT_GE(with["paths"]["p"].value("sloAttainment", 0.0), 0.97) << with;
  }
  ASSERT_EQ(router_->Stop(SIGTERM, 10s), 0);
  StartRouter(endpoints, 400, "0", {"--pools-file", dir_ + "/pools.json", "--spill", "off"});
  const double burst_before = Served(burst);
  const json without = Load("70:4");
  EXPECT_EQ(Served(burst), burst_before);
  EXPECT_LT(without["paths"]["p"].value("sloAttainment", 1.0), 0.9) << without;
}

// The router forms classify's batches (formedBy: router): the model server, which batches
// nothing itself (MAX_BATCH_SIZE 1), sees requests of up to 4 rows, 2.5 or more on average at
// 150 requests/s (a 15 ms wait fills 3.25 on average); every client gets exactly its own rows back;
// and the path keeps its SLO where the same load sent one by one (11 ms each: at most 90
// requests/s) does not.
TEST_F(RouterTest, TheRouterFormsBatchesOfThePlansSizeAndCutsTheAnswersBack) {
  pipeline_ = R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: chain, namespace: demo}
spec:
  hardwareClasses: [{name: cpu}]
  tasks:
    - name: classify
      variants:
        - name: v
          batchSize: {formedBy: router, max: 8}
          profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {b: 1, c: 10}}}]
  paths: [{name: p, tasks: [classify], sloMs: )" +
              // Under ASan, beside CI's cluster tests, one of the eight at once below was once
              // answered past 200 ms: there the SLO only needs to let every request through.
              std::to_string(kSanitized ? 2000 : 200) + "}]\n";
  std::ofstream(dir_ + "/batching.json")
      << R"({"batches": [{"task": "classify", "variant": "v", "batchSize": 4, "waitMs": 15}]})";
  const std::string model = Model("classify", "0,1,10", 1, 0);
  const std::string endpoints = "classify=" + model + "@v/cpu";
  StartRouter(endpoints, 200, "0", {"--batching-file", dir_ + "/batching.json"});
  // Eight at once, each with its own numbers: each answer holds its own.
  std::vector<std::thread> clients;
  std::vector<json> answers(8);
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&, c] {
      const json request = {
          {"inputs",
           {{{"name", "x"}, {"datatype", "FP32"}, {"shape", {1, 2}}, {"data", {c, c + 0.5}}}}}};
      const testing::ShellResult r = testing::RunShell(
          "curl -s -H 'x-pipescale-path: p' --data-binary '" + request.dump() +
          "' http://127.0.0.1:" + std::to_string(port_) + "/v2/models/chain/infer");
      answers[c] = json::parse(r.out, nullptr, false);
    });
  }
  for (std::thread& t : clients) t.join();
  for (int c = 0; c < 8; ++c) {
    ASSERT_TRUE(answers[c].contains("outputs")) << answers[c];
    EXPECT_EQ(answers[c]["outputs"][0]["data"], json({c, c + 0.5})) << answers[c];
    EXPECT_EQ(answers[c]["outputs"][0]["shape"], json({1, 2})) << answers[c];
  }
  const double requests0 = Served(model);
  const json batched = Load("150:4");
  const double rows = ModelMetric(model, "pipescale_model_rows_total");
  const double requests = Served(model) - requests0;
  EXPECT_GE((rows - 8) / requests, 2.5) << "rows per request the model served";
  const std::string m = Metrics();
  const auto value = [&](const std::string& series) { return FirstValue(m, series); };
  EXPECT_EQ(value("pipescale_router_batch_rows_bucket{namespace=\"demo\",pipeline=\"chain\","
                  "task=\"classify\",le=\"4\"}"),
            value("pipescale_router_batch_rows_count"))
      << "no batch above the batch size: " << m;
  // The SLO held only where the router runs at its own speed: under ASan, beside CI's cluster
  // tests, the batched run once kept 86.6% (the rows and batches above are what it checks there).
  if (!kSanitized) {
    EXPECT_GE(batched["paths"]["p"].value("sloAttainment", 0.0), 0.95) << batched;
  }
  ASSERT_EQ(router_->Stop(SIGTERM, 10s), 0);
  StartRouter(endpoints, 200, "0");
  const json alone = Load("150:4");
  if (!kSanitized) {
    EXPECT_LT(alone["paths"]["p"].value("sloAttainment", 1.0), 0.8) << alone;
  }
}

}  // namespace
}  // namespace pipescale
