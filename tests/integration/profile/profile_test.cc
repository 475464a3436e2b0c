// `pipescale profile` (in-process, through cli::Run) against pipescale's emulated model server
// on loopback, which runs a batch of b rows for a known d(b): what it measures, what it writes
// and how the planners take it, how it fails against a closed port, a web server that is not a
// model server and a server that dies or refuses mid-run. No cluster: --deployment is tested on
// the local cluster (deployment_test.cc).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/cli.h"
#include "integration/harness/loopback.h"
#include "integration/harness/process.h"
#include "integration/harness/test_dir.h"
#include "integration/harness/wait.h"
#include "support/cli_run.h"
#include "support/shell.h"
#include "support/text.h"

namespace pipescale {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::Process;
using namespace std::chrono_literals;

// The emulated server's d(b) = A b^2 + B b + C ms, and the pipeline holding it as the profile.
constexpr double kA = 0.2, kB = 5, kC = 30;
constexpr int kMaxBatch = 8;

constexpr const char* kPipeline = R"(# Two models on one CPU class; detect's profile is what
# pipescale profile measures.
apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: chain}
spec:
  optimizer: fa2
  hardwareClasses:
    - {name: cpu, costPerHour: 0.1}
  tasks:
    - name: detect
      next: [{task: classify}]
      variants:
        - name: small
          batchSize: {max: 8}
          profiles:
            - hardwareClass: cpu
              latencyMs: {quadratic: {a: 0.2, b: 5, c: 30}}  # the emulator's
    - name: classify
      variants:
        - name: resnet
          batchSize: {max: 8}
          profiles:
            - {hardwareClass: cpu, latencyMs: {quadratic: {a: 0.1, b: 3, c: 5}}}
  paths:
    - {name: p, tasks: [detect, classify], sloMs: 400}
)";

using Output = testing::CliOutput;
using testing::RunCli;

class ProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshTestDir("profile");
    std::ofstream(dir_ + "/true.yaml") << kPipeline;
    std::filesystem::copy_file(dir_ + "/true.yaml", dir_ + "/measured.yaml");
  }

  // An emulated model server for "detect" on `host` with d(b) = `latency` and batches of 1
  // (each request runs at once); its address.
  std::string StartServer(const std::string& host, const std::string& latency = "0.2,5,30") {
    const std::string port_file = dir_ + "/" + host + ".port";
    setenv("MAX_BATCH_SIZE", "1", 1);
    servers_.push_back(std::make_unique<Process>(
        std::vector<std::string>{PIPESCALE_MODEL_SERVER, "--model", "detect", "--host", host,
                                 "--port", "0", "--port-file", port_file, "--latency-ms", latency},
        dir_ + "/" + host + ".log"));
    const std::vector<int> ports = testing::WaitForPorts(port_file, 10s);
    EXPECT_FALSE(ports.empty()) << servers_.back()->Log();
    return host + ":" + (ports.empty() ? "0" : std::to_string(ports[0]));
  }

  std::vector<std::string> Profile(const std::string& file, std::vector<std::string> more) const {
    std::vector<std::string> args = {"profile", "-f",         file,    "--task",
                                     "detect",  "--variant",  "small", "--hardware-class",
                                     "cpu",     "--progress", "none"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }

  // The true pipeline with detect's profile scaled by `factor`, plus `add_ms`; its file.
  std::string Scaled(double factor, double add_ms = 0) const {
    const std::string text = testing::ReplaceFirst(
        kPipeline, "{a: 0.2, b: 5, c: 30}",
        "{a: " + std::to_string(kA * factor) + ", b: " + std::to_string(kB * factor) +
            ", c: " + std::to_string(kC * factor + add_ms) + "}");
    const std::string file =
        dir_ + "/scaled-" + std::to_string(factor) + "+" + std::to_string(add_ms) + ".yaml";
    std::ofstream(file) << text;
    return file;
  }

  std::string dir_;
  std::vector<std::unique_ptr<Process>> servers_;
};

double TrueMs(int b) { return kA * b * b + kB * b + kC; }

// What the planner decides for each task at `rate`: "task:replicas:batch ...".
std::string PlanAt(const std::string& file, double rate) {
  const Output r = RunCli({"plan", "-f", file, "--rate", std::to_string(rate), "-o", "json"});
  EXPECT_EQ(r.code, cli::kExitOk) << r.err;
  const json plan = json::parse(r.out);
  std::string out;
  for (const json& t : plan["tasks"]) {
    out += t["task"].get<std::string>() + ":" + std::to_string(t["replicas"].get<int>()) + ":" +
           std::to_string(t["batchSize"].get<int>()) + " ";
  }
  return out;
}

TEST_F(ProfileTest, MeasuresTheEmulatorsProfileAndWritesWhatPlansTheSame) {
  const std::string address = StartServer("127.0.8.1");
  const std::string measured = dir_ + "/measured.yaml";
  // The file gets each size's p50: the plans below are compared on it. The mean (the default)
  // of 30 requests moves with one stall of a busy machine (on CI once 8.5% at b=1 against 4.2%
  // for the p50), and near FA2's thresholds that moves a batch size; its accuracy is held below.
  const Output r = RunCli(Profile(measured, {"--address", address, "--requests", "30", "--warmup",
                                             "3", "--statistic", "p50", "--write", "-o", "json"}));
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  const json report = json::parse(r.out);
  ASSERT_EQ(report["batches"].size(), static_cast<size_t>(kMaxBatch));
  // (1) Each size's p50 within the call's overhead (kCallOverheadMs) + 3% of the emulator's d(b)
  // and never below it, and its mean, less the slowest call, within 10% + the overhead (CI once:
  // +11% at b=1 with one stall in it): a round trip carries 1-3 ms of wake-ups and loopback
  // beyond d(b) on a busy 2-core machine (CI measured 1.77 ms once, more than 2 ms another
  // time), an additive cost a relative bound alone reads as an error of the profile; one stall
  // among 30 requests moves the mean by another 2-3%, the p50 not. A profile 25% off is 9-20 ms
  // off. The errors are in the log.
  std::string errors;
  for (const json& batch : report["batches"]) {
    const int b = batch["batch"];
    const double p50 = batch["p50Ms"], mean = batch["meanMs"];
    EXPECT_NEAR(batch["latencyMs"].get<double>(), p50, 1e-3);  // what is written, to the µs
    const double error = (p50 - TrueMs(b)) / TrueMs(b);
    errors += "b=" + std::to_string(b) + " p50 " + std::to_string(p50) + " ms, mean " +
              std::to_string(mean) + " ms, d(b) " + std::to_string(TrueMs(b)) + " ms, p50 error " +
              std::to_string(100 * error) + "%\n";
    EXPECT_LT(p50 - TrueMs(b), testing::kCallOverheadMs + 0.03 * TrueMs(b)) << "batch " << b;
    EXPECT_GT(p50, 0.99 * TrueMs(b)) << "batch " << b;  // the emulator sleeps d(b) at least
    EXPECT_GT(mean, 0.99 * TrueMs(b)) << "batch " << b;
    EXPECT_LT(testing::MeanWithoutSlowest(mean, batch["maxMs"], batch["requests"]),
              1.10 * TrueMs(b) + testing::kCallOverheadMs)
        << "batch " << b;
    EXPECT_EQ(batch["queueReported"], 30);
  }
  std::cout << errors << "fit: " << report["fit"].dump() << "\n";
  EXPECT_NEAR(report["fit"]["b"].get<double>(), kB, 0.2 * kB);
  // The file: only detect's profile line changed, its comment kept.
  std::ifstream in(measured);
  std::stringstream text;
  text << in.rdbuf();
  std::string expected = kPipeline;
  const std::string old_value = "{quadratic: {a: 0.2, b: 5, c: 30}}";
  const size_t at = expected.find(old_value);
  std::string written = text.str();
  ASSERT_EQ(written.substr(0, at), expected.substr(0, at));
  const size_t rest = written.find("  # the emulator's");
  ASSERT_NE(rest, std::string::npos) << written;
  EXPECT_EQ(written.substr(rest), expected.substr(at + old_value.size()));
  EXPECT_EQ(written.substr(at, 14), "{points: [[1, ") << written;
  // (2) The planners plan the same on the measured profile as on the true one, at each rate
  // where the true profile 5% faster, or 5% slower and the overhead (1) allows on top, plans
  // the same too (FA2 picks the smallest batch that keeps up, so at other rates a 1% error may
  // move it), and where a profile 25% slower would not: the comparison can fail.
  int compared = 0, wrong_differs = 0;
  for (double rate : {20.0, 25.0, 27.0, 30.0, 70.0, 74.0, 80.0, 98.0, 100.0, 190.0}) {
    const std::string truth = PlanAt(dir_ + "/true.yaml", rate);
    if (PlanAt(Scaled(0.95), rate) != truth ||
        PlanAt(Scaled(1.05, testing::kCallOverheadMs), rate) != truth) {
      continue;
    }
    ++compared;
    const std::string wrong = PlanAt(Scaled(1.25), rate);
    std::cout << "rate " << rate << ": " << truth << "| 25% slower: " << wrong << "\n";
    wrong_differs += wrong != truth ? 1 : 0;
    EXPECT_EQ(PlanAt(measured, rate), truth) << "rate " << rate;
  }
  EXPECT_GE(compared, 4);
  EXPECT_GE(wrong_differs, 3);
}

TEST_F(ProfileTest, NothingListening) {
  const std::string address = "127.0.0.1:" + std::to_string(testing::FreePort());
  const Output r = RunCli(Profile(dir_ + "/measured.yaml", {"--address", address}));
  EXPECT_EQ(r.code, cli::kExitFailure);
  EXPECT_EQ(r.err.rfind("pipescale profile: nothing answers at " + address +
                            " (GET /v2/health/"
                            "ready: Failed to connect to 127.0.0.1 port ",
                        0),
            0u)
      << r.err;
}

// A real web server that is not a model server: Prometheus (the tests' own, hack/install-deps.sh
// installs it), which answers 404 to the protocol's health call.
TEST_F(ProfileTest, AWebServerThatIsNotAModelServer) {
  const int port = testing::FreePort();
  std::ofstream(dir_ + "/prometheus.yml") << "global: {}\n";
  Process web(
      {"/bin/sh", "-c",
       "exec prometheus --config.file=" + dir_ + "/prometheus.yml --storage.tsdb.path=" + dir_ +
           "/prometheus-data --web.listen-address=127.0.0.1:" + std::to_string(port)},
      dir_ + "/prometheus.log");
  ASSERT_TRUE(Eventually([&] { return testing::HttpGet(port, "/-/ready").first == 200; }, 20s))
      << web.Log();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const Output r = RunCli(Profile(dir_ + "/measured.yaml", {"--address", address}));
  EXPECT_EQ(r.code, cli::kExitFailure) << web.Log();
  EXPECT_EQ(r.err.rfind("pipescale profile: " + address +
                            " does not speak the Open Inference Protocol: GET /v2/health/ready "
                            "answered 404 (text/plain",
                        0),
            0u)
      << r.err << web.Log();
}

TEST_F(ProfileTest, AServerKilledDuringTheRun) {
  const std::string address = StartServer("127.0.8.3", "0,0,20");
  auto run = std::async(std::launch::async, [&] {
    return RunCli(Profile(dir_ + "/measured.yaml",
                          {"--address", address, "--requests", "40", "--warmup", "0", "--write"}));
  });
  // Killed mid-run: once batch size 1's 40 requests (of 320) are served, by the server's count.
  EXPECT_TRUE(Eventually(
      [&] {
        const std::string m = testing::RunShell("curl -s http://" + address + "/metrics").out;
        const size_t at = m.find("\npipescale_model_requests_total{");
        return at != std::string::npos && std::stod(m.substr(m.find("} ", at) + 2)) >= 40;
      },
      30s, 20ms));
  kill(servers_.back()->pid(), SIGKILL);
  const Output r = run.get();
  EXPECT_EQ(r.code, cli::kExitFailure);
  EXPECT_EQ(r.err.rfind("pipescale profile: " + address + " failed at batch size ", 0), 0u)
      << r.err;
  EXPECT_NE(r.err.find(" of 40: POST /v2/models/detect/infer: "), std::string::npos) << r.err;
  // Nothing written.
  std::ifstream in(dir_ + "/measured.yaml");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), kPipeline);
}

// The emulator refuses bodies over 4 MiB (its default --max-body-bytes): rows of 150000 elements
// pass at 6 rows, not at 7.
TEST_F(ProfileTest, AServerThatRefusesMidRun) {
  const std::string address = StartServer("127.0.8.4", "0,0,1");
  const Output r =
      RunCli(Profile(dir_ + "/measured.yaml", {"--address", address, "--requests", "2", "--warmup",
                                               "0", "--input-shape", "150000"}));
  EXPECT_EQ(r.code, cli::kExitFailure);
  EXPECT_EQ(r.err,
            "pipescale profile: " + address +
                " failed at batch size 7, request 1 of 2: POST /v2/models/detect/infer "
                "answered 413: \"{\\\"error\\\":\\\"request body exceeds 4194304 bytes\\\"}\"\n");
}

}  // namespace
}  // namespace pipescale
