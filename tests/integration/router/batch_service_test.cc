// The router's measure of d(b) (pipescale_router_batch_service_seconds) against model servers
// whose d(b) the test sets, at a load that keeps their queues long: for every series with enough
// batches, the mean service time is within 10% of the true d(rows) plus 3 ms for the call's own
// overhead (the HTTP round trip and the server's timer overshoot: 1-3 ms on a loaded 2-core
// machine, 5 ms once in CI, against batches of 30 ms and more; each run prints the measured
// excess). A queue's wait, 1.5 batches and more here, is far outside that allowance. Batches
// the servers form (MAX_BATCH_SIZE 8), batches the router forms (batchSize.formedBy: router), and a
// server told to run 1.3 times slower than its profile (PIPESCALE_LATENCY_SCALE), whose means
// follow it. No cluster: the endpoints are given on the command line.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "integration/harness/loopback.h"
#include "integration/harness/process.h"
#include "integration/harness/test_dir.h"
#include "support/shell.h"

namespace pipescale {
namespace {

using nlohmann::json;
using testing::Process;
using namespace std::chrono_literals;

// A batch's profile as the model server's --latency-ms takes it: a r^2 + b r + c milliseconds.
struct Quadratic {
  double a = 0, b = 0, c = 0;
  double Ms(int rows) const { return a * rows * rows + b * rows + c; }
  std::string Flag() const {
    return std::to_string(a) + "," + std::to_string(b) + "," + std::to_string(c);
  }
};

// One series of the Summary: its labels, sum and count.
struct Series {
  std::map<std::string, std::string> labels;
  double sum = 0, count = 0;
};

// The labels of a sample line of Prometheus's text format, "name{k="v",...} value".
std::map<std::string, std::string> LabelsOf(const std::string& line) {
  std::map<std::string, std::string> out;
  const std::regex pair(R"re((\w+)="([^"]*)")re");
  const std::string inside = line.substr(line.find('{'), line.find('}') - line.find('{'));
  for (std::sregex_iterator it(inside.begin(), inside.end(), pair), end; it != end; ++it) {
    out[(*it)[1]] = (*it)[2];
  }
  return out;
}

// Every series of pipescale_router_batch_service_seconds in `metrics`, by its labels.
std::map<std::string, Series> BatchService(const std::string& metrics) {
  std::map<std::string, Series> out;
  std::istringstream lines(metrics);
  const std::string name = "pipescale_router_batch_service_seconds_";
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name, 0) != 0) continue;
    const std::string kind = line.substr(name.size(), line.find('{') - name.size());
    const std::string key = line.substr(line.find('{'), line.find('}') - line.find('{') + 1);
    Series& s = out[key];
    s.labels = LabelsOf(line);
    (kind == "sum" ? s.sum : s.count) = std::stod(line.substr(line.rfind(' ') + 1));
  }
  return out;
}

// The value of the first series of `name` (its labels included), -1 when there is none.
double Value(const std::string& metrics, const std::string& name) {
  const size_t at = metrics.find(name);
  return at == std::string::npos ? -1 : std::stod(metrics.substr(metrics.find(' ', at) + 1));
}

class RouterBatchServiceTest : public ::testing::Test {
 protected:
  // The batches of one size the operator needs before it trusts their mean (spec.profiles'
  // default minBatches); fewer are noise the operator does not plan from either.
  static constexpr int kMinSamples = 30;
  static constexpr double kTolerance = 0.10;

  void SetUp() override { dir_ = testing::FreshTestDir("batch-service"); }

  // A model server for `task` on its own loopback address: d(b) = `profile`, batches of up to
  // `batch` requests formed as soon as it is free (it waits for no more); `scale`, when not
  // empty, is its PIPESCALE_LATENCY_SCALE. Its ip:port.
  std::string Model(const std::string& task, const Quadratic& profile, int batch,
                    const std::string& scale = "") {
    const std::string host = "127.0.8." + std::to_string(++hosts_);
    if (!scale.empty()) setenv("PIPESCALE_LATENCY_SCALE", scale.c_str(), 1);
    testing::Started server = testing::StartModelServer(
        {.task = task, .latency_ms = profile.Flag(), .batch = batch, .max_wait_ms = 0}, host, dir_);
    unsetenv("PIPESCALE_LATENCY_SCALE");
    EXPECT_FALSE(server.ports.empty()) << server.process->Log();
    processes_.push_back(std::move(server.process));
    return host + ":" + (server.ports.empty() ? "0" : std::to_string(server.ports[0]));
  }

  // The router over `endpoints` for `pipeline` (written to a file); `more` adds flags. It admits
  // every request (no admission control), so the servers' queues grow past their capacity.
  void StartRouter(const std::string& pipeline, const std::string& endpoints,
                   const std::vector<std::string>& more = {}) {
    std::ofstream(dir_ + "/pipeline.yaml") << pipeline;
    std::vector<std::string> flags = {"--threads", "2",           "--drain-seconds",
                                      "0",         "--admission", "off"};
    flags.insert(flags.end(), more.begin(), more.end());
    testing::Started router = testing::StartRouter(dir_ + "/pipeline.yaml", endpoints, flags, dir_);
    router_ = std::move(router.process);
    ASSERT_EQ(router.ports.size(), 2u) << router_->Log();
    port_ = router.ports[0];
    metrics_port_ = router.ports[1];
  }

  // The load generator against the router to the trace's end; its report.
  json Load(const std::string& trace) const {
    Process load({PIPESCALE_LOADGEN, "-f", dir_ + "/pipeline.yaml", "--trace", trace, "--router",
                  "127.0.0.1:" + std::to_string(port_), "--report", dir_ + "/report.json"},
                 dir_ + "/loadgen.log");
    EXPECT_EQ(load.Stop(0, 60s), 0) << load.Log();
    return json::parse(testing::ReadFile(dir_ + "/report.json"), nullptr, false);
  }

  std::string Metrics() const { return testing::HttpGet(metrics_port_, "/metrics").second; }

  // Checks every series of `task` with kMinSamples batches or more against `scale` x `truth`
  // and prints each (the measured excess over the truth is the call's overhead past the
  // batch); the mean service time of all of the task's batches, weighted by their count.
  double Check(const std::map<std::string, Series>& series, const std::string& task,
               const Quadratic& truth, double scale = 1) {
    int checked = 0;
    for (const auto& [key, s] : series) {
      if (s.labels.at("task") != task) continue;
      EXPECT_EQ(s.labels.at("hardware_class"), "cpu") << key;
      EXPECT_EQ(s.labels.at("variant"), "v") << key;
      const int rows = std::stoi(s.labels.at("rows"));
      const double true_ms = scale * truth.Ms(rows);
      const double mean_ms = 1000 * s.sum / s.count;
      std::fprintf(stderr,
                   "%-9s rows %3d: true d %7.2f ms, measured %7.2f ms (%+.2f ms, %+.1f%%), "
                   "%5.0f batches%s\n",
                   task.c_str(), rows, true_ms, mean_ms, mean_ms - true_ms,
                   100 * (mean_ms / true_ms - 1), s.count,
                   s.count < kMinSamples ? " (too few)" : "");
      if (s.count < kMinSamples) continue;
      ++checked;
      EXPECT_NEAR(mean_ms, true_ms, kTolerance * true_ms + testing::kCallOverheadMs)
          << task << " rows " << rows;
    }
    EXPECT_GE(checked, 2) << "too few series of " << task << " with " << kMinSamples << " batches";
    return MeanService(series, task);
  }

  // The mean service time of all of `task`'s batches (weighted by their count), in seconds.
  static double MeanService(const std::map<std::string, Series>& series, const std::string& task) {
    double sum = 0, count = 0;
    for (const auto& [key, s] : series) {
      if (s.labels.at("task") != task) continue;
      sum += s.sum;
      count += s.count;
    }
    return count > 0 ? sum / count : 0;
  }

  // The queues were long, so the measure means something: at `task`, which bounds the load, a
  // call took 2.5 times its batch or more on average (the rest it waited at its server), and
  // past capacity (the trace's second step) half the requests took 3 times their path's batches
  // (`path_s`) or more.
  static void ExpectLongQueues(const json& report, const std::string& metrics,
                               const std::string& task, double task_s, double path_s) {
    const double p50 = report["phases"][1]["paths"]["p"].value("p50Ms", 0.0) / 1000;
    std::fprintf(stderr,
                 "%s: mean call %.1f ms, its batch %.1f ms; the path's batches %.1f ms, a request "
                 "%.1f ms on average, %.1f ms at the median past capacity\n",
                 task.c_str(), 1000 * MeanCall(metrics, task), 1000 * task_s, 1000 * path_s,
                 1000 * MeanRequest(metrics), 1000 * p50);
    EXPECT_GT(MeanCall(metrics, task), 2.5 * task_s) << task;
    EXPECT_GT(p50, 3 * path_s) << report;
  }

  // The router's mean time for a task's calls (the pod's queue and its batch) and for a request
  // of path p end to end, in seconds.
  static double MeanCall(const std::string& metrics, const std::string& task) {
    const std::string labels =
        R"({namespace="demo",pipeline="chain",task=")" + task + R"(",variant="v"})";
    return Value(metrics, "pipescale_router_task_duration_seconds_sum" + labels) /
           Value(metrics, "pipescale_router_task_duration_seconds_count" + labels);
  }
  static double MeanRequest(const std::string& metrics) {
    const std::string labels = R"({namespace="demo",path="p",pipeline="chain"})";
    return Value(metrics, "pipescale_request_duration_seconds_sum" + labels) /
           Value(metrics, "pipescale_request_duration_seconds_count" + labels);
  }

  std::string dir_;
  int hosts_ = 0;
  int port_ = 0, metrics_port_ = 0;
  std::vector<std::unique_ptr<Process>> processes_;
  std::unique_ptr<Process> router_;
};

// A chain of two tasks whose declared profiles are wrong on purpose (what the measure is for),
// queries of 1 or 2 rows, an SLO no queue here reaches.
std::string Chain(const std::string& classify_batch = "") {
  return R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: chain, namespace: demo}
spec:
  hardwareClasses: [{name: cpu}]
  querySizes: [{size: 1, weight: 1}, {size: 2, weight: 1}]
  tasks:
    - {name: detect, next: [{task: classify}], variants: [{name: v, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {c: 5}}}]}]}
    - {name: classify, variants: [{name: v, )" +
         classify_batch + R"(profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {c: 5}}}]}]}
  paths: [{name: p, tasks: [detect, classify], sloMs: 30000}]
)";
}

// The servers form batches of up to 8 requests (8 to 16 rows). detect: d = 5 r + 40 ms, 80
// requests/s at 12 rows a batch; classify: d = 0.2 r^2 + 2 r + 30, 97 requests/s. 70 requests/s
// for 3 s (detect at 88%), then 100 for 4 s (125%: its queue grows by 20 a second).
TEST_F(RouterBatchServiceTest, ServerFormedBatchesAreMeasuredPastTheirQueue) {
  const Quadratic detect{0, 5, 40}, classify{0.2, 2, 30};
  processes_.reserve(2);
  const std::string endpoints = "detect=" + Model("detect", detect, 8) +
                                "@v/cpu/8;classify=" + Model("classify", classify, 8) + "@v/cpu/8";
  StartRouter(Chain(), endpoints);
  const json report = Load("70:3,100:4");
  EXPECT_GT(report["paths"]["p"]["codes"].value("200", 0), 400) << report;
  const std::string m = Metrics();
  const auto series = BatchService(m);
  const double detect_s = Check(series, "detect", detect);
  const double classify_s = Check(series, "classify", classify);
  ExpectLongQueues(report, m, "detect", detect_s, detect_s + classify_s);
}

// The router forms classify's batches of up to 8 rows, waiting up to 80 ms for one to fill; its
// server batches nothing and serves one at a time: d = 4 r + 20 ms, 52 ms for 8 rows, about 100
// requests/s of 1.5 rows. 90 requests/s for 3 s, then 130 for 4 s: the batches queue at the
// server. Every batch is one sample (the count is the batches the server ran, not the requests in
// them), from the moment it was sent: its wait to fill in the router is in no sample.
TEST_F(RouterBatchServiceTest, RouterFormedBatchesAreMeasuredOnceFromWhenTheyAreSent) {
  const Quadratic detect{0, 0, 2}, classify{0, 4, 20};
  processes_.reserve(2);
  const std::string classify_pod = Model("classify", classify, 1);
  const std::string endpoints =
      "detect=" + Model("detect", detect, 8) + "@v/cpu/8;classify=" + classify_pod + "@v/cpu";
  std::ofstream(dir_ + "/batching.json")
      << R"({"batches": [{"task": "classify", "variant": "v", "batchSize": 8, "waitMs": 80}]})";
  StartRouter(Chain("batchSize: {formedBy: router, max: 8}, "), endpoints,
              {"--batching-file", dir_ + "/batching.json"});
  const json report = Load("90:3,130:4");
  EXPECT_GT(report["paths"]["p"]["codes"].value("200", 0), 500) << report;
  const std::string m = Metrics();
  const auto series = BatchService(m);
  const double classify_s = Check(series, "classify", classify);
  const std::string kFormed =
      R"(pipescale_router_batch_rows_count{namespace="demo",pipeline="chain",task="classify"})";
  double batches = 0;
  for (const auto& [key, s] : series) batches += s.labels.at("task") == "classify" ? s.count : 0;
  const std::string model = testing::RunShell("curl -s http://" + classify_pod + "/metrics").out;
  const double served = Value(model, "pipescale_model_batch_size_count{");
  const double answered = report["paths"]["p"]["codes"].value("200", 0);
  std::fprintf(stderr,
               "classify: %.0f batches measured, %.0f run by its server, %.0f formed by the "
               "router, for %.0f requests\n",
               batches, served, Value(m, kFormed), answered);
  EXPECT_EQ(batches, served);
  EXPECT_EQ(batches, Value(m, kFormed));
  EXPECT_LT(batches, answered / 4);  // about 5 requests a batch
  ExpectLongQueues(report, m, "classify", classify_s, classify_s + MeanService(series, "detect"));
}

// A server told its hardware is 1.3 times slower than its profile (PIPESCALE_LATENCY_SCALE, as a
// variant's pod template would set it): the router measures 1.3 x d(rows).
TEST_F(RouterBatchServiceTest, ASlowerServerIsMeasuredSlower) {
  const Quadratic detect{0, 2, 10}, classify{0, 5, 30};
  processes_.reserve(2);
  const std::string endpoints = "detect=" + Model("detect", detect, 8) +
                                "@v/cpu/8;classify=" + Model("classify", classify, 8, "1.3") +
                                "@v/cpu/8";
  StartRouter(Chain(), endpoints);
  // classify: 8 requests in 1.3 x (5 x 12 + 30) = 117 ms, 68 requests/s: 88%, then 125%.
  const json report = Load("60:3,85:4");
  EXPECT_GT(report["paths"]["p"]["codes"].value("200", 0), 300) << report;
  const std::string m = Metrics();
  const auto series = BatchService(m);
  const double classify_s = Check(series, "classify", classify, 1.3);
  ExpectLongQueues(report, m, "classify", classify_s, classify_s + MeanService(series, "detect"));
}

// A latency scale that is not a number above 0 is refused at start, saying why.
TEST_F(RouterBatchServiceTest, TheModelServerRefusesABadLatencyScale) {
  const std::string server = PIPESCALE_MODEL_SERVER;
  for (const std::string bad : {"0", "-1", "fast", "1,3", "nan", "inf"}) {
    // `timeout`: a server that took the value would serve until killed.
    const testing::ShellResult flag =
        testing::RunShell("timeout 5 " + server + " --port 0 --latency-scale '" + bad + "'");
    EXPECT_EQ(flag.code, 2) << bad;
    EXPECT_NE(flag.out.find("--latency-scale must be a number above 0"), std::string::npos)
        << flag.out;
    const testing::ShellResult env = testing::RunShell("PIPESCALE_LATENCY_SCALE='" + bad +
                                                       "' timeout 5 " + server + " --port 0");
    EXPECT_EQ(env.code, 2) << bad;
    EXPECT_NE(env.out.find("PIPESCALE_LATENCY_SCALE must be a number above 0"), std::string::npos)
        << env.out;
  }
}

}  // namespace
}  // namespace pipescale
