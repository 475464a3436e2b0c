// pipescale-router in front of a model pod that misbehaves in its error bodies: whatever bytes a
// pod answers a failure with, the client gets the 502 of a failed model with a JSON body, and the
// router counts no panic. (A pod's answer is outside input: it must never fail the router.)
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>

#include "integration/harness/loopback.h"
#include "integration/harness/process.h"
#include "integration/harness/test_dir.h"
#include "support/fake_http_server.h"
#include "support/shell.h"

namespace pipescale {
namespace {

using nlohmann::json;

constexpr const char* kPipeline = R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: one, namespace: demo}
spec:
  hardwareClasses: [{name: cpu}]
  tasks:
    - {name: detect, variants: [{name: v, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {c: 5}}}]}]}
  paths: [{name: p, tasks: [detect], sloMs: 2000}]
)";

// The sum of pipescale_panics_total over its labels in a /metrics page (0 when absent). Read by
// hand: std::regex trips g++ 12's maybe-uninitialized warning in the sanitizer build.
double Panics(const std::string& metrics) {
  constexpr std::string_view kName = "pipescale_panics_total";
  double total = 0;
  std::istringstream in(metrics);
  for (std::string l; std::getline(in, l);) {
    if (!l.starts_with(kName) || l.size() == kName.size()) continue;
    if (l[kName.size()] != '{' && l[kName.size()] != ' ') continue;
    total += std::stod(l.substr(l.rfind(' ') + 1));
  }
  return total;
}

TEST(RouterErrorBody, APodsErrorBodyThatIsNotUtf8IsA502AndNoPanic) {
  const std::string dir = testing::FreshTestDir("router-error-body");
  // Ready and serving the model, but every inference fails with bytes that are not UTF-8.
  testing::FakeHttpServer pod([](const testing::FakeHttpServer::Request& r) {
    if (r.target.find("/infer") == std::string::npos) {
      return testing::HttpResponse(200, "application/json", "{}");
    }
    return testing::HttpResponse(500, "text/plain", "model crashed: \xff\xfe\xc3(\x80 bad bytes");
  });
  ASSERT_TRUE(pod.ok());
  std::ofstream(dir + "/pipeline.yaml") << kPipeline;
  const std::string address = pod.url().substr(std::string("http://").size());
  testing::Started router =
      testing::StartRouter(dir + "/pipeline.yaml", "detect=" + address, {}, dir);
  ASSERT_EQ(router.ports.size(), 2u) << router.process->Log();
  const int port = router.ports[0];
  const int metrics_port = router.ports[1];
  const double panics_before = Panics(testing::HttpGet(metrics_port, "/metrics").second);

  std::ofstream(dir + "/request.json")
      << R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]})";
  const testing::ShellResult curl = testing::RunShell(
      "curl -s -o " + dir + "/reply.json -w '%{http_code}' -H 'x-pipescale-path: p' " +
      "--data-binary @" + dir + "/request.json http://127.0.0.1:" + std::to_string(port) +
      "/v2/models/one/infer");
  const std::string body = testing::ReadFile(dir + "/reply.json");
  EXPECT_EQ(curl.out, "502") << body << "\n" << router.process->Log();
  const json reply = json::parse(body, nullptr, false);
  ASSERT_TRUE(reply.is_object()) << body;
  EXPECT_NE(reply.value("error", "").find("detect"), std::string::npos) << body;
  EXPECT_GT(pod.requests(), 0);
  // The counter is served (so that it not moving means something) and has not moved.
  const std::string metrics = testing::HttpGet(metrics_port, "/metrics").second;
  EXPECT_NE(metrics.find("# TYPE pipescale_panics_total counter"), std::string::npos) << metrics;
  EXPECT_EQ(Panics(metrics), panics_before) << router.process->Log();
}

}  // namespace
}  // namespace pipescale
