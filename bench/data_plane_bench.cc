// What each paper's data-plane policy buys, measured with real processes on loopback: the
// router, emulated model servers (one per planned replica, each with its class's profile) and
// the open-loop load generator. The plans and tables come from the optimizers themselves.
//
//   data_plane_bench [--seconds 15] [--only loki|kairos|mark]
// Prints markdown:
// - Loki: at 1.5x the demand a plan was made for, SLO violations (late, dropped or failed) and
//   the accuracy served, under each drop policy (the paper's Fig. 7 ablation).
// - Kairos: the most queries per second whose p99 stays within QoS, for the planned mixed pool
//   under the matcher and under first come first served, and for the homogeneous pool of the
//   base class the budget buys.
// - MArk: p99 and SLO attainment under a burst, with and without spill to the burst class.
#include <signal.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "api/deployment.h"
#include "api/pipeline_parse.h"
#include "common/flags.h"
#include "integration/harness/loopback.h"
#include "integration/harness/process.h"
#include "integration/harness/wait.h"
#include "model/plan.h"
#include "optimizer/registry.h"
#include "support/shell.h"

namespace {

using namespace pipescale;
using nlohmann::json;
using testing::Process;
using namespace std::chrono_literals;

std::string dir;   // NOLINT: the bench's scratch directory, set once in main
int seconds = 15;  // NOLINT: of load per measurement

// A set of processes that all stop when it goes.
struct Fleet {
  std::vector<std::unique_ptr<Process>> processes;
  int hosts = 0;
  int metrics_port = 0;  // the last router's

  // A model server of `task` on its own loopback address: ip:port.
  std::string Model(const std::string& task, const model::QuadraticLatency& d, int batch,
                    int max_wait_ms) {
    const std::string host = "127.0.9." + std::to_string(++hosts);
    std::ostringstream latency;
    latency << d.a << "," << d.b << "," << d.c;
    testing::Started server = testing::StartModelServer(
        {.task = task, .latency_ms = latency.str(), .batch = batch, .max_wait_ms = max_wait_ms},
        host, dir);
    processes.push_back(std::move(server.process));
    return host + ":" + std::to_string(server.ports.empty() ? 0 : server.ports[0]);
  }

  // The router for `pipeline_file` over `endpoints`; its port (and its metrics' in
  // metrics_port).
  int Router(const std::string& pipeline_file, const std::string& endpoints,
             const std::vector<std::string>& more) {
    std::vector<std::string> flags = {"--drain-seconds", "0"};
    flags.insert(flags.end(), more.begin(), more.end());
    testing::Started router = testing::StartRouter(pipeline_file, endpoints, flags, dir);
    processes.push_back(std::move(router.process));
    metrics_port = router.ports.size() > 1 ? router.ports[1] : 0;
    return router.ports.empty() ? 0 : router.ports[0];
  }
};

// The load generator's report of `trace` against the router on `port`.
json Load(const std::string& pipeline_file, int port, const std::string& trace) {
  Process load(
      {PIPESCALE_LOADGEN, "-f", pipeline_file, "--trace", trace, "--router",
       "127.0.0.1:" + std::to_string(port), "--report", dir + "/report.json", "--timeout-s", "5"},
      dir + "/loadgen.log");
  load.Stop(0, 300s);
  return json::parse(testing::ReadFile(dir + "/report.json"), nullptr, false);
}

// A counter's value summed over the router's series whose labels contain `match`.
double RouterCounter(int metrics_port, const std::string& name, const std::string& match) {
  return testing::ExposedSum(testing::HttpGet(metrics_port, "/metrics").second, name, match);
}

model::Pipeline Write(const std::string& text, const std::string& file) {
  std::ofstream(dir + "/" + file) << text;
  auto parsed = api::ParsePipeline(text);
  if (!parsed.pipeline) {
    std::fprintf(stderr, "%s: %s\n", file.c_str(), parsed.errors[0].ToString().c_str());
    std::exit(2);
  }
  return *parsed.pipeline;
}

// One server per planned replica, as the plan's batch; "task=ip:port@variant/class/batch;...".
std::string ServePlan(Fleet& fleet, const model::Pipeline& pipeline, const model::Plan& plan,
                      int max_wait_ms) {
  std::map<std::string, std::string> by_task;
  for (const model::TaskPlan& t : plan.tasks) {
    const model::Variant* v = pipeline.FindVariant(t.task, t.variant);
    const model::Profile* p = v->FindProfile(t.hardware_class);
    for (int r = 0; r < t.replicas; ++r) {
      const std::string address =
          fleet.Model(t.task, p->latency.quadratic, t.batch_size, max_wait_ms);
      std::string& list = by_task[t.task];
      list += (list.empty() ? "" : ",") + address + "@" + t.variant + "/" + t.hardware_class + "/" +
              std::to_string(t.batch_size);
    }
  }
  std::string endpoints;
  for (const auto& [task, list] : by_task)
    endpoints += (endpoints.empty() ? "" : ";") + task + "=" + list;
  return endpoints;
}

// ---------------------------------------------------------------------------------------------

constexpr const char* kLoki = R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: traffic, namespace: bench}
spec:
  optimizer: loki
  hardwareClasses: [{name: cpu, costPerHour: 0.1}]
  budget: {maxReplicas: 4}
  tasks:
    - name: detect
      next: [{task: classify}]
      variants:
        - {name: yolo, accuracy: 0.8, batchSize: {max: 4}, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {b: 4, c: 8}}}]}
    - name: classify
      variants:
        - {name: b7, accuracy: 0.9, batchSize: {max: 4}, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {b: 10, c: 20}}}]}
        - {name: b0, accuracy: 0.7, batchSize: {max: 4}, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {b: 2, c: 4}}}]}
  paths: [{name: p, tasks: [detect, classify], sloMs: 250}]
)";

void BenchLoki() {
  const model::Pipeline pipeline = Write(kLoki, "loki.yaml");
  const double planned = 200, offered = 300;
  const model::Plan plan =
      optimizer::Solve(pipeline, model::Workload{.path_rates_rps = {{"p", planned}}}, "loki");
  std::ofstream(dir + "/routing.json")
      << api::RoutingConfigMapData(pipeline, plan)[api::kLokiRoutingKey].get<std::string>();
  std::printf(
      "\n### Loki: %g requests/s against a plan for %g (phase %s, planned accuracy %.3f)\n\n",
      offered, planned, model::PhaseName(plan.accuracy_scaling()->phase),
      plan.accuracy_scaling()->accuracy);
  std::printf(
      "| drop policy | SLO violations | late (504) | dropped | p99 of served (ms) | accuracy "
      "served |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const char* policy : {"none", "last-task", "per-task", "reroute"}) {
    Fleet fleet;
    const std::string endpoints = ServePlan(fleet, pipeline, plan, 0);
    const int port = fleet.Router(
        dir + "/loki.yaml", endpoints,
        {"--routing-file", dir + "/routing.json", "--drop-policy", policy, "--threads", "1"});
    const json report =
        Load(dir + "/loki.yaml", port, std::to_string(offered) + ":" + std::to_string(seconds));
    const json& p = report["paths"]["p"];
    const int metrics = fleet.metrics_port;
    const double dropped = RouterCounter(metrics, "pipescale_router_drops_total", "");
    const double b7 =
        RouterCounter(metrics, "pipescale_router_task_requests_total", "variant=\"b7\"");
    const double b0 =
        RouterCounter(metrics, "pipescale_router_task_requests_total", "variant=\"b0\"");
    const double sent = p.value("sent", 0.0);
    const double late = p["codes"].value("504", 0.0);
    // Accuracy of what classify served, each variant normalised to b7 (detect has one).
    const double accuracy = (b7 * 1.0 + b0 * 0.7 / 0.9) / std::max(1.0, b7 + b0);
    std::printf("| %s | %.1f%% | %.1f%% | %.1f%% | %.0f | %.3f |\n", policy,
                100 * (1 - p.value("sloAttainment", 0.0)), 100 * (late - dropped) / sent,
                100 * dropped / sent, p.value("p99Ms", 0.0), accuracy);
    std::fflush(stdout);
  }
}

// ---------------------------------------------------------------------------------------------

constexpr const char* kKairos = R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: rm2, namespace: bench}
spec:
  optimizer: kairos
  hardwareClasses: [{name: gpu, costPerHour: 0.5, maxReplicas: 4}, {name: cpu, costPerHour: 0.1, maxReplicas: 10}]
  budget: {costPerHour: 1.5}
  querySizes: [{size: 1, weight: 4}, {size: 4, weight: 2}, {size: 10, weight: 1}]
  tasks:
    - name: rank
      variants:
        - name: v
          batchSize: {max: 10}
          profiles:
            - {hardwareClass: gpu, latencyMs: {quadratic: {b: 4, c: 8}}}
            - {hardwareClass: cpu, latencyMs: {quadratic: {a: 1.6, c: 4}}}
  paths: [{name: p, tasks: [rank], sloMs: 120}]
)";

// The most queries/s (to 5%) whose p99 stays within the QoS, between 0 and `high`.
double AllowableQps(const std::string& file, const std::string& endpoints,
                    const std::vector<std::string>& flags, double qos_ms, double high) {
  double lo = 0;
  while (high - lo > 0.05 * high) {
    const double mid = (lo + high) / 2;
    const json report = [&] {
      Fleet router;  // a router per trial, over the same servers
      const int port = router.Router(file, endpoints, flags);
      return Load(file, port, std::to_string(mid) + ":" + std::to_string(seconds));
    }();
    std::this_thread::sleep_for(3s);  // what a failed trial left queued drains
    const json& p = report["paths"]["p"];
    const bool ok = p["codes"].value("200", 0.0) >= 0.99 * p.value("sent", 1.0) &&
                    p.value("p99Ms", 1e9) <= qos_ms;
    (ok ? lo : high) = mid;
  }
  return lo;
}

void BenchKairos() {
  const model::Pipeline pipeline = Write(kKairos, "kairos.yaml");
  // A demand beyond what the budget buys: Kairos's own pick within the budget.
  const model::Plan plan =
      optimizer::Solve(pipeline, model::Workload{.path_rates_rps = {{"p", 1000}}}, "kairos");
  std::ofstream(dir + "/pools.json")
      << api::RoutingConfigMapData(pipeline, plan)[api::kPoolsRoutingKey].get<std::string>();
  std::string counts;
  for (const model::TaskPlan& t : plan.tasks) {
    counts += (counts.empty() ? "" : " + ") + std::to_string(t.replicas) + " " + t.hardware_class;
  }
  // The base class alone: as many as the budget buys.
  const int homogeneous = static_cast<int>(1.5 / 0.5 + 1e-9);
  std::printf("\n### Kairos: allowable queries/s at p99 <= 120 ms\n\n");
  std::printf(
      "| pool | dispatch | cost ($/h) | queries/s | vs homogeneous |\n|---|---|---|---|---|\n");
  Fleet servers;
  const std::string mixed = ServePlan(servers, pipeline, plan, 0);
  model::Plan base = plan;
  base.tasks = {{.task = "rank",
                 .variant = "v",
                 .hardware_class = "gpu",
                 .replicas = homogeneous,
                 .batch_size = 10}};
  const std::string only_gpu = ServePlan(servers, pipeline, base, 0);
  const double h =
      AllowableQps(dir + "/kairos.yaml", only_gpu, {"--pools-file", dir + "/pools.json"}, 120, 400);
  const double m =
      AllowableQps(dir + "/kairos.yaml", mixed, {"--pools-file", dir + "/pools.json"}, 120, 400);
  const double f =
      AllowableQps(dir + "/kairos.yaml", mixed,
                   {"--pools-file", dir + "/pools.json", "--pool-dispatch", "fcfs"}, 120, 400);
  std::printf("| %d gpu | matcher | %.2f | %.0f | 1.00x |\n", homogeneous, homogeneous * 0.5, h);
  std::printf("| %s | first come, first served | %.2f | %.0f | %.2fx |\n", counts.c_str(),
              plan.cost_per_hour, f, f / h);
  std::printf("| %s | matcher | %.2f | %.0f | %.2fx |\n", counts.c_str(), plan.cost_per_hour, m,
              m / h);
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------------------------

constexpr const char* kMark = R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: classify, namespace: bench}
spec:
  optimizer: mark
  hardwareClasses:
    - {name: cpu, costPerHour: 0.1, maxReplicas: 4}
    - {name: burst, costPerHour: 0.08, burst: {minWarm: 1}}
  tasks:
    - name: classify
      variants:
        - name: v
          batchSize: {max: 1}
          profiles:
            - {hardwareClass: cpu, latencyMs: {quadratic: {c: 25}}}
            - {hardwareClass: burst, latencyMs: {quadratic: {c: 25}}}
  paths: [{name: p, tasks: [classify], sloMs: 200}]
)";

void BenchMark() {
  const model::Pipeline pipeline = Write(kMark, "mark.yaml");
  const model::Plan plan =
      optimizer::Solve(pipeline, model::Workload{.path_rates_rps = {{"p", 30}}}, "mark");
  std::ofstream(dir + "/pools.json")
      << api::RoutingConfigMapData(pipeline, plan)[api::kPoolsRoutingKey].get<std::string>();
  const std::string trace =
      "30:" + std::to_string(seconds) + ",70:10,30:" + std::to_string(seconds);
  std::printf("\n### MArk: a burst from 30 to 70 requests/s for 10 s (plan for 30)\n\n");
  std::printf("| spill | p99 (ms) | SLO attainment | spilled |\n|---|---|---|---|\n");
  for (const char* spill : {"off", "on"}) {
    Fleet fleet;
    const std::string endpoints = ServePlan(fleet, pipeline, plan, 0);
    const int port = fleet.Router(dir + "/mark.yaml", endpoints,
                                  {"--pools-file", dir + "/pools.json", "--spill", spill});
    const json report = Load(dir + "/mark.yaml", port, trace);
    const json& p = report["paths"]["p"];
    const double spilled = RouterCounter(fleet.metrics_port, "pipescale_router_spills_total", "");
    std::printf("| %s | %.0f | %.1f%% | %.1f%% |\n", spill, p.value("p99Ms", 0.0),
                100 * p.value("sloAttainment", 0.0), 100 * spilled / p.value("sent", 1.0));
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--seconds") {
      auto value = ParseInteger("--seconds", argv[i + 1], 1, 3600);
      if (!value) {
        std::fprintf(stderr, "data_plane_bench: %s\n", value.error().message.c_str());
        return 2;
      }
      seconds = *value;
    }
    if (flag == "--only") only = argv[i + 1];
  }
  dir = std::filesystem::temp_directory_path() / ("data-plane-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  if (only.empty() || only == "loki") BenchLoki();
  if (only.empty() || only == "kairos") BenchKairos();
  if (only.empty() || only == "mark") BenchMark();
  std::filesystem::remove_all(dir);
  return 0;
}
