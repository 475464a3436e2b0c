// The operator process measured on the local cluster of real parts (bench/on-local-cluster.sh
// operator_bench starts it and points $PIPESCALE_LOCAL_ENV at it). Two numbers of the spec:
//  - scale: N pipelines in one operator; how long until every one has a plan applied, and the
//    operator's resident memory (VmRSS, peak VmHWM) with them all cached and reconciled.
//  - reaction: one pipeline under a stepped load through model-server pods on the emulated nodes;
//    the time from the moment Prometheus's answer to the operator's own query calls for a
//    different plan to the moment the Deployments carry it, against the 2 s interval.
// Prints markdown for bench/README.md.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/deployment.h"
#include "api/deployment_view.h"
#include "api/pipeline_object.h"
#include "common/flags.h"
#include "integration/harness/load.h"
#include "integration/harness/process.h"
#include "kube/client.h"
#include "kube/config.h"
#include "metrics/prometheus.h"
#include "reconciler/decide.h"
#include "reconciler/reconciler.h"
#include "support/shell.h"

namespace {

using namespace pipescale;
using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "operator_bench: %s\n", what.c_str());
  std::exit(1);
}

// A numeric flag's value, or exit 2 naming it.
int IntFlag(const char* name, const char* text, int min, int max) {
  auto value = ParseInteger(name, text, min, max);
  if (!value) {
    std::fprintf(stderr, "operator_bench: %s\n", value.error().message.c_str());
    std::exit(2);
  }
  return *value;
}

std::map<std::string, std::string> ReadEnvFile() {
  const char* path = std::getenv("PIPESCALE_LOCAL_ENV");
  if (path == nullptr)
    Die("PIPESCALE_LOCAL_ENV is not set; run bench/on-local-cluster.sh operator_bench");
  std::map<std::string, std::string> vars;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("export ", 0) != 0) continue;
    const auto eq = line.find('=');
    vars[line.substr(7, eq - 7)] = line.substr(eq + 1);
  }
  return vars;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// VmRSS and VmHWM of a process, in MiB.
std::pair<double, double> Memory(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  double rss = 0, hwm = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) rss = std::stod(line.substr(6)) / 1024;
    if (line.rfind("VmHWM:", 0) == 0) hwm = std::stod(line.substr(6)) / 1024;
  }
  return {rss, hwm};
}

void CreateNamespace(const kube::Client& client, const std::string& ns) {
  auto created =
      client.Create("/api/v1/namespaces",
                    {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  if (!created.ok()) Die(created.error().message);
}

// detect -> classify on one CPU class, one path.
json Pipeline(const std::string& ns, const std::string& name, const std::string& interval,
              const json& metrics) {
  auto task = [](const char* task_name, const char* variant, double b, double c) {
    return json{{"name", task_name},
                {"variants",
                 {{{"name", variant},
                   {"batchSize", {{"max", 8}}},
                   {"profiles",
                    {{{"hardwareClass", "cpu"},
                      {"latencyMs", {{"quadratic", {{"a", 0}, {"b", b}, {"c", c}}}}}}}}}}}};
  };
  json detect = task("detect", "small", 10, 30);
  detect["next"] = {{{"task", "classify"}}};
  return {{"apiVersion", "pipescale.io/v1alpha1"},
          {"kind", "InferencePipeline"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"interval", interval},
            {"hardwareClasses", {{{"name", "cpu"}, {"costPerHour", 0.1}}}},
            {"tasks", {detect, task("classify", "tiny", 5, 15)}},
            {"paths", {{{"name", "p"}, {"tasks", {"detect", "classify"}}, {"sloMs", 400}}}},
            {"behavior", {{"scaleDown", {{"stabilizationWindowSeconds", 0}}}}},
            {"metrics", metrics}}}};
}

bool Condition(const json& object, const char* type, const char* status) {
  for (const auto& c : object.value("status", json::object()).value("conditions", json::array())) {
    if (c["type"] == type && c["status"] == status) return true;
  }
  return false;
}

// Planned from its measured rate: a plan in the status, and the metrics in.
bool Planned(const json& object) {
  return object.value("status", json::object()).contains("plan") &&
         Condition(object, "MetricsAvailable", "True");
}

// The value of every sample of `metric` (any labels) that `filter` is found in, from a
// Prometheus text exposition.
std::vector<double> SamplesOf(const std::string& text, const std::string& metric,
                              const std::string& filter = "") {
  std::vector<double> values;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(metric, 0) != 0 ||
        (line.size() > metric.size() && line[metric.size()] != '{' && line[metric.size()] != ' ')) {
      continue;
    }
    if (!filter.empty() && line.find(filter) == std::string::npos) continue;
    values.push_back(std::strtod(line.c_str() + line.rfind(' ') + 1, nullptr));
  }
  return values;
}

double SumOf(const std::string& text, const std::string& metric, const std::string& filter = "") {
  const std::vector<double> values = SamplesOf(text, metric, filter);
  return std::accumulate(values.begin(), values.end(), 0.0);
}

std::string Fetch(const std::string& url) {
  const auto r = testing::RunShell("curl -s --noproxy '*' " + url);
  return r.out;
}

// What the apiserver, Prometheus and the operator counted so far.
struct Counts {
  double apiserver = 0;   // requests, every client's, watches as one each
  double prometheus = 0;  // instant and range queries over HTTP
  double reconciles = 0;  // the operator's
};

Counts Count(const std::string& kubeconfig, const std::string& prometheus_url,
             const std::string& operator_metrics) {
  Counts c;
  c.apiserver =
      SumOf(testing::RunShell("kubectl --kubeconfig " + kubeconfig + " get --raw /metrics").out,
            "apiserver_request_total");
  const std::string prom = Fetch(prometheus_url + "/metrics");
  c.prometheus = SumOf(prom, "prometheus_http_requests_total", "handler=\"/api/v1/query\"") +
                 SumOf(prom, "prometheus_http_requests_total", "handler=\"/api/v1/query_range\"");
  if (!operator_metrics.empty()) {
    c.reconciles = SumOf(Fetch(operator_metrics), "controller_runtime_reconcile_total");
  }
  return c;
}

// How long each pipeline's plan had gone without a look when the operator rendered a scrape:
// the time the scrape was asked for minus its pipescale_last_decision_timestamp_seconds. The
// operator renders on arrival; at 5000 pipelines the body is megabytes and takes a while to
// send, which a clock read after it arrived would count as lag.
std::vector<double> DecisionAges(const std::string& url) {
  const double asked =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::vector<double> ages = SamplesOf(Fetch(url), "pipescale_last_decision_timestamp_seconds");
  for (double& age : ages) age = asked - age;
  return ages;
}

// N pipelines on the default metrics templates, each at a rate of its own from one exporter
// Prometheus scrapes. Their class selects no node: in Apply mode their Deployments and Pods
// exist and wait unscheduled, so what is measured is the operator (its caches hold them all),
// not a thousand emulated model servers.
void Scale(const kube::Client& client, const std::map<std::string, std::string>& env,
           const std::string& operator_binary, int n, const std::string& mode, int workers,
           int settle_s) {
  const std::string ns = "scale-bench";
  CreateNamespace(client, ns);
  std::map<std::string, std::map<std::string, double>> rates;
  const auto start_create = Clock::now();
  for (int i = 0; i < n; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "p%04d", i);
    rates[name] = {{"p", 1.0 + i % 40}};
    json pipeline = Pipeline(ns, name, "10s", {{"prometheusURL", env.at("PIPESCALE_PROMETHEUS")}});
    pipeline["spec"]["mode"] = mode;
    pipeline["spec"]["hardwareClasses"][0]["nodeSelector"] = {{"pipescale.io/pool", "none"}};
    auto created =
        client.Create(kube::CollectionPath(reconciler::kInferencePipelines, ns), pipeline);
    if (!created.ok()) Die(created.error().message);
  }
  const double create_s = Seconds(Clock::now() - start_create);
  testing::Load load(ns, rates);
  std::this_thread::sleep_for(35s);  // the default windows fill (30 s)

  const std::string prometheus = env.at("PIPESCALE_PROMETHEUS");
  const std::string metrics_address = "127.0.0.1:18089";
  const Counts idle0 = Count(env.at("KUBECONFIG"), prometheus, "");
  const auto idle_start = Clock::now();
  std::this_thread::sleep_for(30s);
  const Counts idle1 = Count(env.at("KUBECONFIG"), prometheus, "");
  const double idle_s = Seconds(Clock::now() - idle_start);

  const std::string dir = env.at("PIPESCALE_DIR");
  testing::Process op({operator_binary, "--kubeconfig", env.at("KUBECONFIG"), "--namespace", ns,
                       "--metrics-bind-address", metrics_address, "--health-probe-bind-address",
                       "127.0.0.1:0", "--workers", std::to_string(workers)},
                      dir + "/operator-scale.log");
  const auto t0 = Clock::now();
  const pid_t pid = op.pid();
  double hwm = 0;
  int planned = 0;
  while (Clock::now() - t0 < 900s) {
    auto list = client.Get(kube::CollectionPath(reconciler::kInferencePipelines, ns));
    if (!list.ok()) Die(list.error().message);
    planned = static_cast<int>(
        std::count_if(list->at("items").begin(), list->at("items").end(), Planned));
    hwm = std::max(hwm, Memory(pid).second);
    if (planned == n) break;
    std::this_thread::sleep_for(2s);
  }
  const double all_planned_s = Seconds(Clock::now() - t0);
  if (planned != n) Die(std::to_string(planned) + " of " + std::to_string(n) + " planned");
  // Steady state: three intervals (by default), nothing polled meanwhile.
  std::this_thread::sleep_for(std::chrono::seconds(settle_s));
  const std::string operator_metrics = "http://" + metrics_address + "/metrics";
  const Counts run0 = Count(env.at("KUBECONFIG"), prometheus, operator_metrics);
  const auto run_start = Clock::now();
  std::vector<double> rss, lag;
  for (int i = 0; i < 30; ++i) {
    std::this_thread::sleep_for(1s);
    const auto [r, h] = Memory(pid);
    rss.push_back(r);
    hwm = std::max(hwm, h);
    const std::vector<double> ages = DecisionAges(operator_metrics);
    lag.insert(lag.end(), ages.begin(), ages.end());
  }
  if (lag.empty()) Die("the operator exports no pipescale_last_decision_timestamp_seconds");
  std::sort(lag.begin(), lag.end());
  const auto lag_at = [&](double q) { return lag[static_cast<size_t>(q * (lag.size() - 1))]; };
  const Counts run1 = Count(env.at("KUBECONFIG"), prometheus, operator_metrics);
  // The samples' scrapes take a while at thousands of pipelines: the window is what the clock says.
  const double run_s = Seconds(Clock::now() - run_start);
  auto deployments = client.Get(kube::CollectionPath(kube::kDeployments, ns));
  if (!deployments.ok()) Die(deployments.error().message);
  if (op.Stop(SIGTERM, 20s) != 0) Die("the operator did not stop cleanly:\n" + op.Log());
  (void)client.Delete(kube::CollectionPath(reconciler::kInferencePipelines, ns));

  const double apiserver =
      (run1.apiserver - run0.apiserver) / run_s - (idle1.apiserver - idle0.apiserver) / idle_s;
  const double queries =
      (run1.prometheus - run0.prometheus) / run_s - (idle1.prometheus - idle0.prometheus) / idle_s;
  std::printf("### %d pipelines in one operator (%s mode, %d workers)\n\n", n, mode.c_str(),
              workers);
  std::printf("| measure | value |\n|---|---:|\n");
  std::printf("| pipelines created through the API | %d in %.1f s |\n", n, create_s);
  std::printf("| Deployments the operator created and keeps | %zu |\n",
              deployments->at("items").size());
  std::printf("| operator start to every pipeline planned from its rate | %.1f s |\n",
              all_planned_s);
  std::printf(
      "| time since a pipeline's last decision, p50 / p99 / max (30 samples each) | "
      "%.1f / %.1f / %.1f s |\n",
      lag_at(0.5), lag_at(0.99), lag.back());
  std::printf("| reconciles per pipeline per 10 s interval, steady | %.2f |\n",
              (run1.reconciles - run0.reconciles) / run_s * 10 / n);
  std::printf("| apiserver requests/s the operator adds, steady (apiserver's count) | %.1f |\n",
              apiserver);
  std::printf("| Prometheus queries/s the operator adds, steady (Prometheus's count) | %.1f |\n",
              queries);
  std::printf("| resident memory, steady (VmRSS, mean of 30 s) | %.1f MiB |\n",
              std::accumulate(rss.begin(), rss.end(), 0.0) / rss.size());
  std::printf("| resident memory, peak (VmHWM) | %.1f MiB |\n\n", hwm);
  std::fflush(stdout);
}

// (replicas, batch) per Deployment.
using Placement = std::map<std::string, std::pair<int, int>>;

Placement Deployed(const kube::Client& client, const std::string& ns) {
  Placement out;
  auto list = client.Get(kube::CollectionPath(kube::kDeployments, ns));
  if (!list.ok()) return out;
  for (const auto& d : list->at("items")) {
    const auto f = api::ReadManagedFields(api::ReadDeployment(d), "MAX_BATCH_SIZE");
    out[d["metadata"]["name"].get<std::string>()] = {f.replicas.value_or(-1),
                                                     f.batch_size.value_or(-1)};
  }
  return out;
}

// What the operator's own decision makes of a measured rate.
Placement Wanted(const json& object, double rps) {
  const api::PipelineObject read = api::ReadPipelineObject(object);
  reconciler::Observed o;
  o.meta = read.meta;
  o.metrics = model::MetricsSnapshot{.path_rates_rps = {{"p", rps}}};
  Placement out;
  const auto decision = reconciler::Decide(o, read.parsed);
  if (const auto& applied = decision.status.plan) {
    for (size_t i = 0; i < applied->deployments.size(); ++i) {
      out[applied->deployments[i]] = {applied->plan.tasks[i].replicas,
                                      applied->plan.tasks[i].batch_size};
    }
  }
  return out;
}

void Reaction(const kube::Client& client, const std::map<std::string, std::string>& env,
              const std::map<std::string, std::string>& binaries) {
  const std::string ns = "reaction-bench";
  CreateNamespace(client, ns);
  const std::string query = "sum(rate(pipescale_requests_total{namespace=\"" + ns +
                            "\",pipeline=\"bench\",path=\"p\"}[5s]))";
  json object = Pipeline(ns, "bench", "2s",
                         {{"prometheusURL", env.at("PIPESCALE_PROMETHEUS")}, {"pathRate", query}});
  object["metadata"]["uid"] = "local";
  object["spec"]["router"] = json::object();  // the load enters through it
  const std::string dir = env.at("PIPESCALE_DIR");
  const std::string file = dir + "/reaction-bench.json";
  std::ofstream(file) << object.dump();
  {
    auto created = client.Create(kube::CollectionPath(reconciler::kInferencePipelines, ns), object);
    if (!created.ok()) Die(created.error().message);
  }
  testing::Process op(
      {binaries.at("operator"), "--kubeconfig", env.at("KUBECONFIG"), "--namespace", ns,
       "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0"},
      dir + "/operator-reaction.log");
  // Steps between three levels, 20 s each, so every step settles before the next.
  testing::Process load({binaries.at("loadgen"), "-f", file, "--kubeconfig", env.at("KUBECONFIG"),
                         "--trace", "15:20,150:20,60:20,150:20,15:20,60:20,15:20"},
                        dir + "/loadgen-reaction.log");
  const metrics::PrometheusClient prometheus(env.at("PIPESCALE_PROMETHEUS"));

  // Each poll: does Prometheus's current answer call for a plan other than the deployed one?
  // The first poll where it does starts a clock; the Deployments carrying the new plan stop it.
  // Polls are 100 ms apart, so each sample is good to about 0.2 s.
  std::vector<double> reactions;
  bool timing = false;
  Clock::time_point since{};
  Placement deployed = Deployed(client, ns);
  while (load.Running()) {
    const auto now = Clock::now();
    const Placement current = Deployed(client, ns);
    if (current != deployed) {
      if (timing && !deployed.empty()) reactions.push_back(Seconds(now - since));
      deployed = current;
      timing = false;
    }
    auto value = prometheus.Query(query);
    if (value.ok() && !value->empty() && !deployed.empty()) {
      const bool differs = Wanted(object, value->front().value) != deployed;
      if (differs && !timing) since = now;
      timing = differs;  // false: the rate went back before the operator looked
    }
    std::this_thread::sleep_for(100ms);
  }
  (void)op.Stop(SIGTERM, 10s);
  if (reactions.empty()) Die("no plan change observed; see " + dir + "/operator-reaction.log");
  std::sort(reactions.begin(), reactions.end());
  std::printf("### From a metrics change to the Deployment patch (interval 2 s)\n\n");
  std::printf("| plan changes | median | max | max / interval |\n|---:|---:|---:|---:|\n");
  std::printf("| %zu | %.2f s | %.2f s | %.2f |\n\n", reactions.size(),
              reactions[reactions.size() / 2], reactions.back(), reactions.back() / 2.0);
}

}  // namespace

int main(int argc, char** argv) {
  int pipelines = 500, workers = 2, settle_s = 30;
  std::string mode = "Apply";
  bool scale = true, reaction = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--pipelines" && i + 1 < argc) {
      pipelines = IntFlag("--pipelines", argv[++i], 1, 100000);
    } else if (arg == "--workers" && i + 1 < argc) {
      workers = IntFlag("--workers", argv[++i], 1, 256);
    } else if (arg == "--mode" && i + 1 < argc) {
      mode = argv[++i];
    } else if (arg == "--settle" && i + 1 < argc) {
      settle_s = IntFlag("--settle", argv[++i], 0, 3600);
    } else if (arg == "--only") {
      const std::string which = i + 1 < argc ? argv[++i] : "";
      scale = which == "scale";
      reaction = which == "reaction";
    } else {
      Die("usage: operator_bench [--pipelines N] [--workers N] [--mode Apply|Recommend] "
          "[--settle SECONDS] [--only scale|reaction]");
    }
  }
  const auto env = ReadEnvFile();
  auto config = kube::LoadKubeconfig(env.at("KUBECONFIG"));
  if (!config.ok()) Die(config.error().message);
  const kube::Client client(*config);
  const std::map<std::string, std::string> binaries = {{"operator", PIPESCALE_OPERATOR},
                                                       {"model_server", PIPESCALE_MODEL_SERVER},
                                                       {"loadgen", PIPESCALE_LOADGEN}};
  if (scale) Scale(client, env, binaries.at("operator"), pipelines, mode, workers, settle_s);
  if (reaction) Reaction(client, env, binaries);
  return 0;
}
