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
#include <string>
#include <thread>
#include <vector>

#include "api/deployment.h"
#include "integration/harness/process.h"
#include "kube/client.h"
#include "kube/config.h"
#include "metrics/prometheus.h"
#include "reconciler/decide.h"
#include "reconciler/reconciler.h"

namespace {

using namespace pipescale;
using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "operator_bench: %s\n", what.c_str());
  std::exit(1);
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

bool PlanApplied(const json& object) {
  for (const auto& c : object.value("status", json::object()).value("conditions", json::array())) {
    if (c["type"] == "PlanApplied" && c["status"] == "True") return true;
  }
  return false;
}

void Scale(const kube::Client& client, const std::map<std::string, std::string>& env,
           const std::string& operator_binary, int n) {
  const std::string ns = "scale-bench";
  CreateNamespace(client, ns);
  // Every pipeline reads a rate of its own from Prometheus (a constant vector, so the plans
  // differ without any load generator): the full observe -> solve -> patch path each time.
  const auto start_create = Clock::now();
  for (int i = 0; i < n; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "p%04d", i);
    const json metrics = {{"prometheusURL", env.at("PIPESCALE_PROMETHEUS")},
                          {"pathRate", "vector(" + std::to_string(1 + i % 40) + ")"}};
    auto created = client.Create(kube::CollectionPath(reconciler::kInferencePipelines, ns),
                                 Pipeline(ns, name, "10s", metrics));
    if (!created.ok()) Die(created.error().message);
  }
  const double create_s = Seconds(Clock::now() - start_create);

  const std::string dir = env.at("PIPESCALE_DIR");
  testing::Process op(
      {operator_binary, "--kubeconfig", env.at("KUBECONFIG"), "--namespace", ns,
       "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0"},
      dir + "/operator-scale.log");
  const auto t0 = Clock::now();
  const pid_t pid = op.pid();
  double hwm = 0;
  int applied = 0;
  while (Clock::now() - t0 < 300s) {
    auto list = client.Get(kube::CollectionPath(reconciler::kInferencePipelines, ns));
    if (!list.ok()) Die(list.error().message);
    applied = static_cast<int>(
        std::count_if(list->at("items").begin(), list->at("items").end(), PlanApplied));
    hwm = std::max(hwm, Memory(pid).second);
    if (applied == n) break;
    std::this_thread::sleep_for(200ms);
  }
  const double all_applied_s = Seconds(Clock::now() - t0);
  if (applied != n) Die(std::to_string(applied) + " of " + std::to_string(n) + " applied");
  // Two more intervals of steady reconciles with everything cached.
  std::vector<double> rss;
  for (int i = 0; i < 25; ++i) {
    std::this_thread::sleep_for(1s);
    const auto [r, h] = Memory(pid);
    rss.push_back(r);
    hwm = std::max(hwm, h);
  }
  auto deployments = client.Get(kube::CollectionPath(kube::kDeployments, ns));
  if (!deployments.ok()) Die(deployments.error().message);
  if (op.Stop(SIGTERM, 20s) != 0) Die("the operator did not stop cleanly:\n" + op.Log());
  // Delete the pipelines; the garbage collector removes their Deployments, so the node agent
  // does not run a thousand model servers through the next measurement.
  (void)client.Delete(kube::CollectionPath(reconciler::kInferencePipelines, ns));
  for (int i = 0; i < 300; ++i) {
    auto left = client.Get(kube::CollectionPath(kube::kDeployments, ns));
    if (left.ok() && left->at("items").empty()) break;
    std::this_thread::sleep_for(1s);
  }

  std::printf("### %d pipelines in one operator\n\n", n);
  std::printf("| measure | value |\n|---|---:|\n");
  std::printf("| pipelines created through the API | %d in %.1f s |\n", n, create_s);
  std::printf("| Deployments the operator created and keeps | %zu |\n",
              deployments->at("items").size());
  std::printf("| operator start to every pipeline `PlanApplied=True` | %.1f s |\n", all_applied_s);
  std::printf("| resident memory, steady (VmRSS, mean of 25 s) | %.1f MiB |\n",
              std::accumulate(rss.begin(), rss.end(), 0.0) / rss.size());
  std::printf("| resident memory, peak (VmHWM) | %.1f MiB |\n\n", hwm);
}

// (replicas, batch) per Deployment.
using Placement = std::map<std::string, std::pair<int, int>>;

Placement Deployed(const kube::Client& client, const std::string& ns) {
  Placement out;
  auto list = client.Get(kube::CollectionPath(kube::kDeployments, ns));
  if (!list.ok()) return out;
  for (const auto& d : list->at("items")) {
    const auto f = api::ReadManagedFields(d, "MAX_BATCH_SIZE");
    out[d["metadata"]["name"].get<std::string>()] = {f.replicas.value_or(-1),
                                                     f.batch_size.value_or(-1)};
  }
  return out;
}

// What the operator's own decision makes of a measured rate.
Placement Wanted(const json& object, double rps) {
  reconciler::Observed o;
  o.object = object;
  o.metrics = model::MetricsSnapshot{.path_rates_rps = {{"p", rps}}};
  Placement out;
  const auto decision = reconciler::Decide(o);
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
  int pipelines = 500;
  bool scale = true, reaction = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--pipelines" && i + 1 < argc) {
      pipelines = std::atoi(argv[++i]);
    } else if (arg == "--only") {
      const std::string which = i + 1 < argc ? argv[++i] : "";
      scale = which == "scale";
      reaction = which == "reaction";
    } else {
      Die("usage: operator_bench [--pipelines N] [--only scale|reaction]");
    }
  }
  const auto env = ReadEnvFile();
  auto config = kube::LoadKubeconfig(env.at("KUBECONFIG"));
  if (!config.ok()) Die(config.error().message);
  const kube::Client client(*config);
  const std::map<std::string, std::string> binaries = {{"operator", PIPESCALE_OPERATOR},
                                                       {"model_server", PIPESCALE_MODEL_SERVER},
                                                       {"loadgen", PIPESCALE_LOADGEN}};
  if (scale) Scale(client, env, binaries.at("operator"), pipelines);
  if (reaction) Reaction(client, env, binaries);
  return 0;
}
