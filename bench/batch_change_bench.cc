// How long a plan's batch-size change takes to be in effect, on the local cluster, in both
// modes: the model servers batch themselves (the batch in an env var: the operator's patch
// rolls every pod) or the router forms the batches (the batch in the routing ConfigMap's
// batching.json). The bench makes the write the operator would make, under load through a
// router, and times it to the first batch of the new size and to every replica on it.
// Run through bench/on-local-cluster.sh batch_change_bench, which starts the cluster.
//
//   batch_change_bench [--replicas 3] [--startup-seconds 5]
// The model servers take --startup-seconds to load before they are Ready, as a model does.
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>

#include "api/deployment.h"
#include "api/deployment_view.h"
#include "api/document.h"
#include "api/pipeline_parse.h"
#include "api/router_objects.h"
#include "common/flags.h"
#include "integration/harness/local_env.h"
#include "integration/harness/process.h"
#include "integration/harness/wait.h"
#include "kube/client.h"
#include "reconciler/reconciler.h"
#include "support/shell.h"

namespace {

using namespace pipescale;
using nlohmann::json;
using testing::LocalEnv;
using testing::Process;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "batch_change_bench: %s\n", message.c_str());
  std::exit(1);
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string PipelineText(const std::string& ns, const std::string& formed_by, int startup) {
  return R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: batch, namespace: )" +
         ns + R"(}
spec:
  mode: Recommend
  hardwareClasses: [{name: cpu, costPerHour: 0.1, startupSeconds: )" +
         std::to_string(startup) + R"(}]
  tasks:
    - name: classify
      variants:
        - name: v
          batchSize: {formedBy: )" +
         formed_by + R"(, max: 16}
          template: {spec: {containers: [{name: model, image: pipescale/model-server:dev, args: ["--model=classify", "--startup-seconds=)" +
         std::to_string(startup) +
         R"("], ports: [{name: http, containerPort: 8080}], readinessProbe: {httpGet: {path: /v2/health/ready, port: http}, periodSeconds: 1}}]}}
          profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {b: 2, c: 10}}}]
  paths: [{name: p, tasks: [classify], sloMs: 1000}]
)";
}

// The classify pods: Ready with the new batch, Ready with the old, being deleted.
struct PodView {
  int ready_new = 0, ready_old = 0, terminating = 0;
};
PodView Pods(const kube::Client& client, const std::string& ns, int new_batch) {
  PodView v;
  auto pods =
      client.Get("/api/v1/namespaces/" + ns + "/pods?labelSelector=pipescale.io%2Ftask%3Dclassify");
  if (!pods.ok()) return v;
  for (const json& pod : (*pods)["items"]) {
    if (pod["metadata"].contains("deletionTimestamp")) {
      ++v.terminating;
      continue;
    }
    bool ready = false;
    for (const json& c : pod["status"].value("conditions", json::array())) {
      ready = ready || (c.value("type", "") == "Ready" && c.value("status", "") == "True");
    }
    const bool is_new =
        pod.dump().find("\"value\":\"" + std::to_string(new_batch) + "\"") != std::string::npos;
    if (ready) ++(is_new ? v.ready_new : v.ready_old);
  }
  return v;
}

// Batches the router formed with more than `rows` rows, from its own metrics.
double BatchesAbove(int metrics_port, int rows) {
  const std::string metrics = testing::HttpGet(metrics_port, "/metrics").second;
  return testing::ExposedSum(metrics, "pipescale_router_batch_rows_count", "") -
         testing::ExposedSum(metrics, "pipescale_router_batch_rows_bucket",
                             "le=\"" + std::to_string(rows) + "\"");
}

struct Timing {
  double first_s = -1, all_s = -1;
  int restarted = 0;
};

Timing Measure(const kube::Client& client, const std::string& mode, int replicas, int startup) {
  const LocalEnv& env = LocalEnv::Get();
  const std::string ns = "batch-" + mode;
  auto created =
      client.Create("/api/v1/namespaces",
                    {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  if (!created.ok()) Die(created.error().message);
  const std::string dir = env.Var("PIPESCALE_DIR") + "/batch-" + ns;
  std::filesystem::create_directories(dir);
  const std::string text = PipelineText(ns, mode, startup);
  std::ofstream(dir + "/pipeline.yaml") << text;
  const model::Pipeline pipeline = *api::ParsePipeline(text).pipeline;
  auto object = client.Create(kube::CollectionPath(reconciler::kInferencePipelines, ns),
                              api::ParseDocument(text).value());
  if (!object.ok()) Die(object.error().message);
  const api::Owner owner{.name = "batch", .uid = (*object)["metadata"]["uid"]};
  const model::Task& task = pipeline.spec.tasks[0];
  const model::Variant& v = task.variants[0];
  const int from = 4, to = 8;
  const json deployment = api::BuildDeployment(pipeline, owner, task, v,
                                               pipeline.spec.hardware_classes[0], replicas, from);
  const std::string name = deployment["metadata"]["name"];
  if (auto d = client.Create(kube::CollectionPath(kube::kDeployments, ns), deployment); !d.ok()) {
    Die(d.error().message);
  }
  // The routing ConfigMap the router reads its batches from (the operator's, in router mode).
  const auto batching = [&](int batch) {
    return json{{"batches",
                 {{{"task", "classify"}, {"variant", "v"}, {"batchSize", batch}, {"waitMs", 20}}}}}
        .dump();
  };
  json cm = api::BuildRoutingConfigMap(pipeline, owner, model::Plan{});
  if (mode == "router") cm["data"][api::kBatchingKey] = batching(from);
  if (auto c = client.Create(kube::CollectionPath(kube::kConfigMaps, ns), cm); !c.ok()) {
    Die(c.error().message);
  }
  Process router({PIPESCALE_ROUTER, "--pipeline-file", dir + "/pipeline.yaml", "--kubeconfig",
                  env.Var("KUBECONFIG"), "--listen", "127.0.0.1:0", "--metrics-listen",
                  "127.0.0.1:0", "--port-file", dir + "/router.port", "--drain-seconds", "0"},
                 dir + "/router.log");
  const auto ports = testing::WaitForPorts(dir + "/router.port", 10s);
  if (ports.size() != 2) Die("the router did not start: " + router.Log());
  if (!testing::PollUntil(
          Clock::now() + 120s, [&] { return Pods(client, ns, to).ready_old == replicas; }, 200ms)) {
    Die("the pods did not become Ready");
  }
  Process load({PIPESCALE_LOADGEN, "-f", dir + "/pipeline.yaml", "--trace", "150:600", "--router",
                "127.0.0.1:" + std::to_string(ports[0])},
               dir + "/loadgen.log");
  std::this_thread::sleep_for(5s);
  Timing r;
  const auto t0 = Clock::now();
  if (mode == "router") {
    const double before = BatchesAbove(ports[1], from);
    auto patched = client.MergePatch(
        kube::ObjectPath(kube::kConfigMaps, ns, cm["metadata"]["name"].get<std::string>()),
        {{"data", {{api::kBatchingKey, batching(to)}}}});
    if (!patched.ok()) Die(patched.error().message);
    if (testing::PollUntil(
            Clock::now() + 60s, [&] { return BatchesAbove(ports[1], from) > before; }, 5ms)) {
      // The router is the one place batches form: the first is every replica's.
      r.first_s = r.all_s = Seconds(Clock::now() - t0);
    }
  } else {
    auto current = client.Get(kube::ObjectPath(kube::kDeployments, ns, name));
    const auto patch = api::ManagedPatch(api::ReadDeployment(*current), v.batch_env, replicas, to);
    auto patched =
        client.StrategicMergePatch(kube::ObjectPath(kube::kDeployments, ns, name), *patch);
    if (!patched.ok()) Die(patched.error().message);
    testing::PollUntil(
        Clock::now() + 300s,
        [&] {
          const PodView p = Pods(client, ns, to);
          if (r.first_s < 0 && p.ready_new > 0) r.first_s = Seconds(Clock::now() - t0);
          if (p.ready_new == replicas && p.ready_old == 0) r.all_s = Seconds(Clock::now() - t0);
          return r.all_s >= 0;
        },
        20ms);
    r.restarted = replicas;
  }
  load.Stop(SIGTERM, 10s);
  router.Stop(SIGTERM, 10s);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int replicas = 3, startup = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    for (const auto& [name, value, min, max] :
         {std::tuple{"--replicas", &replicas, 1, 100},
          std::tuple{"--startup-seconds", &startup, 0, 3600}}) {
      if (flag != name) continue;
      auto parsed = ParseInteger(name, argv[i + 1], min, max);
      if (!parsed) {
        std::fprintf(stderr, "batch_change_bench: %s\n", parsed.error().message.c_str());
        return 2;
      }
      *value = *parsed;
    }
  }
  if (!LocalEnv::Available())
    Die("needs the local cluster: run bench/on-local-cluster.sh batch_change_bench");
  const kube::Client client(LocalEnv::Get().Config());
  std::printf("### A batch change from 4 to 8, %d replicas starting in %d s, 150 requests/s\n\n",
              replicas, startup);
  std::printf("| batches formed by | first batch of 8 | every replica on 8 | pods restarted |\n");
  std::printf("|---|---:|---:|---:|\n");
  for (const char* mode : {"server", "router"}) {
    const Timing r = Measure(client, mode, replicas, startup);
    std::printf("| %s | %.2f s | %.2f s | %d |\n", mode, r.first_s, r.all_s, r.restarted);
    std::fflush(stdout);
  }
  return 0;
}
