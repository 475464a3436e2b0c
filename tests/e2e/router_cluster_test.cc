// pipescale-router on the local cluster, in front of model pods the node agent runs: what
// Prometheus reports of it matches what the load generator sent and measured; branches and
// fan-out follow the models' answers; it follows scale-ups, scale-downs and a killed pod with
// no request lost beyond the retry rule, and sends nothing to a pod that has not answered a
// readiness probe (the kubelet's, or its own for a pod started and not yet Ready). The
// router runs as a local process with the admin's kubeconfig (the operator-run router and its
// RBAC are the end-to-end and chart tests'), except where a router pod's drain is tested.
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "api/deployment.h"
#include "api/pipeline_parse.h"
#include "api/router_objects.h"
#include "integration/harness/cluster_test.h"
#include "integration/harness/process.h"
#include "integration/harness/scrape.h"
#include "integration/harness/wait.h"
#include "metrics/prometheus.h"
#include "reconciler/reconciler.h"
#include "reconciler/router.h"
#include "routing/endpoints.h"
#include "support/shell.h"
#include "support/text.h"

namespace pipescale {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::LocalEnv;
using testing::Process;
using namespace std::chrono_literals;

// detect finds 1.5 objects per image on average; half of them go on to classify, all of them
// to recognize. Nothing starts until 2 s after launch, so a new pod is not Ready for 2 s.
constexpr const char* kPipeline = R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: scene, namespace: NAMESPACE}
spec:
  mode: Recommend
  hardwareClasses: [{name: cpu, startupSeconds: 2}]
  tasks:
    - name: detect
      next: [{task: classify, ratio: 0.5}, {task: recognize, ratio: 1.0}]
      variants: [{name: v, multiplicativeFactor: 1.5, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {c: 20}}}]}]
    - {name: classify, variants: [{name: v, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {c: 10}}}]}]}
    - {name: recognize, variants: [{name: v, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {c: 10}}}]}]}
  paths:
    - {name: cars, tasks: [detect, classify], sloMs: 500, weight: 0.6}
    - {name: faces, tasks: [detect, recognize], sloMs: 500, weight: 0.4}
)";

class RouterOnClusterTest : public testing::ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    if (IsSkipped()) return;
    dir_ = ::testing::TempDir() + "/router-cluster-" + ns_;
    std::filesystem::remove_all(dir_);  // a port file of an earlier run is not this router's
    std::filesystem::create_directories(dir_);
    const std::string text = testing::ReplaceFirst(kPipeline, "NAMESPACE", ns_);
    file_ = dir_ + "/pipeline.yaml";
    std::ofstream(file_) << text;
    pipeline_ = *api::ParsePipeline(text).pipeline;
    const auto applied =
        testing::RunShell("kubectl --kubeconfig " + LocalEnv::Get().Var("KUBECONFIG") +
                          " apply -f " + file_ + " 2>&1");
    ASSERT_EQ(applied.code, 0) << applied.out;
    auto object = client_->Get(kube::ObjectPath(reconciler::kInferencePipelines, ns_, "scene"));
    ASSERT_TRUE(object.ok());
    uid_ = (*object)["metadata"]["uid"];
    for (const char* task : {"detect", "classify", "recognize"}) Scale(task, 1);
    StartRouter();
    ASSERT_TRUE(Eventually(
        [&] {
          return ReadyPods("detect") == 1 && ReadyPods("classify") == 1 &&
                 ReadyPods("recognize") == 1;
        },
        60s, 200ms));
  }

  void TearDown() override {
    if (router_) router_->Stop(SIGTERM, 30s);
    std::filesystem::remove(target_file_);
  }

  // The task's Deployment as the operator would write it, at `replicas`.
  void Scale(const std::string& task, int replicas) {
    const model::Task& t = pipeline_.spec.tasks[pipeline_.TaskIndex(task)];
    const json d = api::BuildDeployment(pipeline_, {.name = "scene", .uid = uid_}, t, t.variants[0],
                                        pipeline_.spec.hardware_classes[0], replicas, 1);
    const std::string name = d["metadata"]["name"];
    if (!client_->Get(kube::ObjectPath(kube::kDeployments, ns_, name)).ok()) {
      ASSERT_TRUE(client_->Create(kube::CollectionPath(kube::kDeployments, ns_), d).ok());
    } else {
      ASSERT_TRUE(client_
                      ->MergePatch(kube::ObjectPath(kube::kDeployments, ns_, name),
                                   {{"spec", {{"replicas", replicas}}}})
                      .ok());
    }
  }

  std::vector<json> Pods(const std::string& task) const {
    auto pods = client_->Get("/api/v1/namespaces/" + ns_ + "/pods?labelSelector=" +
                             kube::QueryEscape("pipescale.io/task=" + task));
    std::vector<json> out;
    if (pods.ok()) {
      for (const json& p : (*pods)["items"]) out.push_back(p);
    }
    return out;
  }

  int ReadyPods(const std::string& task) const {
    int ready = 0;
    for (const json& pod : Pods(task)) {
      if (pod["metadata"].contains("deletionTimestamp")) continue;
      for (const json& c : pod["status"].value("conditions", json::array())) {
        ready += c.value("type", "") == "Ready" && c.value("status", "") == "True";
      }
    }
    return ready;
  }

  void StartRouter() {
    router_ = std::make_unique<Process>(
        std::vector<std::string>{PIPESCALE_ROUTER, "--pipeline-file", file_, "--kubeconfig",
                                 LocalEnv::Get().Var("KUBECONFIG"), "--listen", "127.0.0.1:0",
                                 "--metrics-listen", "127.0.0.1:0", "--port-file",
                                 dir_ + "/router.port", "--threads", "2"},
        dir_ + "/router.log");
    const std::vector<int> ports = testing::WaitForPorts(dir_ + "/router.port", 10s);
    ASSERT_EQ(ports.size(), 2u) << router_->Log();
    port_ = ports[0];
    metrics_port_ = ports[1];
    // Scraped by the local Prometheus through file service discovery.
    target_file_ = LocalEnv::Get().Var("PIPESCALE_TARGETS_DIR") + "/router-" + ns_ + ".json";
    std::ofstream(target_file_) << R"([{"targets": ["127.0.0.1:)" << metrics_port_ << "\"]}]";
  }

  // Requests the router process has answered, by its own count: how far the load has gone.
  double Answered() const {
    const std::string m = testing::HttpGet(metrics_port_, "/metrics").second;
    double n = 0;
    for (size_t at = m.find("\npipescale_requests_total{"); at != std::string::npos;
         at = m.find("\npipescale_requests_total{", at + 1)) {
      n += std::stod(m.substr(m.find("} ", at) + 2));
    }
    return n;
  }

  // Waits until Prometheus has scraped every series of `selector` since `unix_seconds`.
  static bool ScrapedSince(const std::string& selector, double unix_seconds) {
    return testing::ScrapedSince(LocalEnv::Get().Var("PIPESCALE_PROMETHEUS"), selector,
                                 unix_seconds);
  }

  // Runs the load generator to its end, sending to `routers` (flags), by default the local
  // router process; its report.
  json Load(const std::string& trace, const std::string& mix = "named",
            std::vector<std::string> routers = {}) {
    if (routers.empty()) routers = {"--router", "127.0.0.1:" + std::to_string(port_)};
    std::vector<std::string> argv = {
        PIPESCALE_LOADGEN,    "-f", file_, "--trace", trace, "--mix", mix, "--report",
        dir_ + "/report.json"};
    argv.insert(argv.end(), routers.begin(), routers.end());
    Process load(argv, dir_ + "/loadgen.log");
    EXPECT_EQ(load.Stop(0, 120s), 0) << load.Log();
    return json::parse(testing::ReadFile(dir_ + "/report.json"), nullptr, false);
  }

  // One value per `by` label of a PromQL query, once Prometheus has scraped the end.
  std::map<std::string, double> Query(const std::string& promql, const std::string& by) const {
    const metrics::PrometheusClient prometheus(LocalEnv::Get().Var("PIPESCALE_PROMETHEUS"));
    std::map<std::string, double> out;
    auto samples = prometheus.Query(promql);
    if (samples.ok()) {
      for (const auto& s : *samples) out[s.labels.count(by) ? s.labels.at(by) : ""] = s.value;
    }
    return out;
  }

  // Requests the load generator's report counts as sent, and as answered 200, over all paths.
  static std::pair<long, long> SentAndServed(const json& report) {
    long sent = 0, ok = 0;
    for (const auto& [path, p] : report["paths"].items()) {
      sent += p["sent"].get<long>();
      ok += p["codes"].value("200", 0L);
    }
    return {sent, ok};
  }

  std::string Selector() const { return "namespace=\"" + ns_ + "\",pipeline=\"scene\""; }

  std::string dir_, file_, uid_, target_file_;
  model::Pipeline pipeline_;
  std::unique_ptr<Process> router_;
  int port_ = 0, metrics_port_ = 0;
};

// Prometheus counts, per path, the requests the load generator sent, and the mean latency it
// measured, within 5%: the router's view is the clients'. Nearly all are answered: the door may
// refuse one the pods' queues would make late on a loaded machine (1 of 730 in a CI run).
TEST_F(RouterOnClusterTest, WhatPrometheusReportsIsWhatTheClientsSaw) {
  const json report = Load("40:30");
  const double end = testing::UnixNow();
  ASSERT_TRUE(report.is_object());
  // Counted once Prometheus has scraped the router after the last answer.
  ASSERT_TRUE(ScrapedSince("pipescale_requests_total{" + Selector() + "}", end));
  const auto sent = Query("sum by (path) (pipescale_requests_total{" + Selector() + "})", "path");
  const auto mean =
      Query("sum by (path) (pipescale_request_duration_seconds_sum{" + Selector() +
                "}) / sum by (path) (pipescale_request_duration_seconds_count{" + Selector() + "})",
            "path");
  for (const char* path : {"cars", "faces"}) {
    const json& client = report["paths"][path];
    ASSERT_GT(client["sent"].get<double>(), 300) << report.dump();
    EXPECT_GE(client["codes"].value("200", 0L), 0.99 * client["sent"].get<double>())
        << report.dump();
    EXPECT_NEAR(sent.at(path), client["sent"].get<double>(), 0.05 * client["sent"].get<double>());
    EXPECT_NEAR(1000 * mean.at(path), client["meanMs"].get<double>(),
                0.05 * client["meanMs"].get<double>());
  }
}

// With the path left to the models, detect's answers decide: 1.5 objects per image, half of
// them to classify, all to recognize. The router makes exactly the calls detect's answers ask
// for: recognize gets one per object detect emitted. The draws themselves are random, so the
// ratios are checked within 5 standard deviations of the counts (a false failure about once in a
// million runs, the two checks together): over ~600 images, 7% for objects per image and 17% for
// classify's share.
TEST_F(RouterOnClusterTest, BranchesAndFanOutFollowTheModelsAnswers) {
  const json report = Load("30:20", "models");
  const double end = testing::UnixNow();
  ASSERT_TRUE(report.is_object());
  // Counted once Prometheus has scraped the router and every model pod after the last answer.
  ASSERT_TRUE(ScrapedSince("pipescale_router_task_requests_total{" + Selector() + "}", end));
  ASSERT_TRUE(
      ScrapedSince("pipescale_model_emitted_requests_total{namespace=\"" + ns_ + "\"}", end));
  const auto calls =
      Query("sum by (task) (pipescale_router_task_requests_total{" + Selector() + ",code=\"200\"})",
            "task");
  const auto emitted = Query(
      "sum by (task) (pipescale_model_emitted_requests_total{namespace=\"" + ns_ + "\"})", "task");
  ASSERT_TRUE(calls.contains("detect") && calls.contains("classify") &&
              calls.contains("recognize") && emitted.contains("detect"));
  const double images = calls.at("detect"), objects = emitted.at("detect");
  EXPECT_GT(images, 450);
  EXPECT_EQ(calls.at("recognize"), objects);
  // Objects per image: 1 or 2, each half the time (standard deviation 0.5 per image).
  EXPECT_NEAR(objects / images, 1.5, 5 * 0.5 / std::sqrt(images));
  // Each object goes to classify with probability 0.5.
  EXPECT_NEAR(calls.at("classify") / objects, 0.5, 5 * 0.5 / std::sqrt(objects));
}

// Under steady load the detect Deployment goes 1 -> 3 -> 1 replicas and one of its pods is
// killed outright: every request is still answered 200 (a failed call is retried once on
// another pod). Until the kill no model server refused a request, so none reached a pod before
// it was Ready (new pods refuse inference for their first 2 s).
TEST_F(RouterOnClusterTest, FollowsScalingAndAKilledPodWithoutLosingARequest) {
  double refused_before_kill = -1;
  std::string killed;
  std::thread changes([&] {
    // Each change comes once the load has gone on for a while (by the router's count, 40 a
    // second), not after a number of seconds: on a slow machine the load is slow to start too.
    EXPECT_TRUE(Eventually([&] { return Answered() >= 100; }, 30s, 100ms));
    Scale("detect", 3);
    EXPECT_TRUE(Eventually([&] { return ReadyPods("detect") == 3; }, 30s, 200ms));
    // Every detect pod has served, as Prometheus saw it: the new ones were sent requests, and
    // what they refused (none, if nothing reached them before they were Ready) was scraped too.
    const std::string detect = "namespace=\"" + ns_ + "\",task=\"detect\"";
    EXPECT_TRUE(Eventually(
        [&] {
          return Query("count(pipescale_model_requests_total{" + detect + "} > 0)", "")[""] >= 3;
        },
        30s, 500ms));
    const auto refused =
        Query("sum(pipescale_model_request_failures_total{namespace=\"" + ns_ + "\"})", "");
    if (refused.contains("")) refused_before_kill = refused.at("");
    // The process listening on one detect pod's address, killed as a crash would be.
    const std::string ip = Pods("detect").front()["status"].value("podIP", "");
    killed = testing::ListenerPid(ip);
    const double answered_at_kill = Answered();
    if (!killed.empty()) kill(std::atoi(killed.c_str()), SIGKILL);
    // Three more seconds' load around the dead pod before the scale-down.
    EXPECT_TRUE(Eventually([&] { return Answered() >= answered_at_kill + 120; }, 30s, 100ms));
    Scale("detect", 1);
  });
  const json report = Load("40:30");
  changes.join();
  ASSERT_TRUE(report.is_object());
  EXPECT_FALSE(killed.empty()) << "no process listened on a detect pod's address";
  EXPECT_EQ(refused_before_kill, 0);
  const auto [sent, ok] = SentAndServed(report);
  EXPECT_GT(sent, 1000);
  EXPECT_EQ(ok, sent) << report.dump();
}

// classify's only pod is one the kubelet (the node agent) first probes a minute after it
// starts: the router probes it itself and sends it calls once it answers (2 s, its start-up),
// while Kubernetes still has it not Ready. Without that, every request of the cars path would
// wait for the kubelet's word, past its deadline. (That nothing reaches a pod before it answers
// is FollowsScalingAndAKilledPodWithoutLosingARequest's check.)
TEST_F(RouterOnClusterTest, APodThatAnswersTheRoutersProbeTakesCallsBeforeTheKubeletsSaysReady) {
  Scale("classify", 0);
  ASSERT_TRUE(Eventually([&] { return Pods("classify").empty(); }, 30s, 200ms));
  const model::Task& t = pipeline_.spec.tasks[pipeline_.TaskIndex("classify")];
  json late = api::BuildDeployment(pipeline_, {.name = "scene", .uid = uid_}, t, t.variants[0],
                                   pipeline_.spec.hardware_classes[0], 1, 1);
  late["metadata"]["name"] = late["metadata"]["name"].get<std::string>() + "-late";
  for (json& c : late["spec"]["template"]["spec"]["containers"]) {
    if (c.contains("readinessProbe")) c["readinessProbe"]["initialDelaySeconds"] = 60;
  }
  ASSERT_TRUE(client_->Create(kube::CollectionPath(kube::kDeployments, ns_), late).ok());
  const json report = Load("10:10");
  ASSERT_TRUE(report.is_object());
  EXPECT_GT(report["paths"]["cars"]["codes"].value("200", 0), 20) << report.dump();
  EXPECT_EQ(ReadyPods("classify"), 0) << "the kubelet's probe came early";
}

// A task's only pod is killed outright under steady load, and the node agent restarts it in 2 s:
// no request is lost. Those that reach the router while classify has no Ready pod wait at the
// door for the pod restarting; those it sent to the dead pod before the apiserver said so (its
// connection refused, no other pod to retry on) wait at classify for the pod's return, and are
// sent again there. Both are answered late (up to the start-up), not refused.
TEST_F(RouterOnClusterTest, ATasksOnlyPodKilledLosesNoRequestItIsHeldForItsRestart) {
  std::string killed;
  double down_ms = 0;
  std::thread change([&] {
    EXPECT_TRUE(Eventually([&] { return Answered() >= 100; }, 30s, 100ms));
    const std::string ip = Pods("classify").front()["status"].value("podIP", "");
    killed = testing::ListenerPid(ip);
    const auto start = std::chrono::steady_clock::now();
    if (!killed.empty()) kill(std::atoi(killed.c_str()), SIGKILL);
    // Back: Ready again after its restart (the same pod, its restart counted).
    EXPECT_TRUE(Eventually(
        [&] {
          const std::vector<json> pods = Pods("classify");
          return pods.size() == 1 && routing::PodReady(pods[0]) &&
                 pods[0]["status"]["containerStatuses"][0].value("restartCount", 0) >= 1;
        },
        30s, 50ms));
    down_ms =
        1000 * std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  const json report = Load("20:20");
  change.join();
  ASSERT_TRUE(report.is_object());
  EXPECT_FALSE(killed.empty()) << "no process listened on the classify pod's address";
  EXPECT_GT(down_ms, 1000) << "the pod was down for its start-up";
  const auto [sent, ok] = SentAndServed(report);
  EXPECT_GT(sent, 300);
  EXPECT_EQ(ok, sent) << "down " << down_ms << " ms: " << report.dump() << router_->Log();
  if (ok != sent) {  // what the router refused, and why
    const std::string m = testing::HttpGet(metrics_port_, "/metrics").second;
    std::istringstream in(m);
    for (std::string line; std::getline(in, line);)
      if (line.starts_with("pipescale_router_shed_total") ||
          line.starts_with("pipescale_requests_total")) {
        std::cerr << line << "\n";
      }
  }
}

// The router as the operator runs it (its objects and routing ConfigMap, two replicas the node
// agent runs as pods under the router's own ServiceAccount), the load generator following its
// Ready pods. One router pod is deleted under steady load: it drains (serves on while clients
// move away, then finishes what is in flight) and exits well within its grace period, and no
// request is lost.
TEST_F(RouterOnClusterTest, ADeletedRouterPodDrainsWithoutLosingARequest) {
  pipeline_.spec.router = model::RouterSpec{.min_replicas = 2};
  const std::string role = "pipescale-router";  // deploy/router-rbac.yaml, as the chart names it
  for (const reconciler::ObjectWrite& w :
       reconciler::RouterWrites(pipeline_, uid_, role, {}, std::nullopt)) {
    ASSERT_TRUE(w.create);
    auto created = client_->Create(kube::CollectionPath(w.type, ns_), w.body);
    ASSERT_TRUE(created.ok()) << w.name << ": " << created.error().message;
  }
  auto object = client_->Get(kube::ObjectPath(reconciler::kInferencePipelines, ns_, "scene"));
  ASSERT_TRUE(object.ok());
  auto routing = reconciler::RouterPipelineWrite(pipeline_, uid_, std::nullopt,
                                                 api::PipelineForRouter(*object));
  ASSERT_TRUE(routing && routing->create);
  ASSERT_TRUE(client_->Create(kube::CollectionPath(kube::kConfigMaps, ns_), routing->body).ok());
  const std::string selector = "pipescale.io/router=scene";
  auto routers = [&] {
    auto pods = client_->Get("/api/v1/namespaces/" + ns_ +
                             "/pods?labelSelector=" + kube::QueryEscape(selector));
    std::vector<json> ready;
    for (const json& pod : pods.ok() ? (*pods)["items"] : json::array()) {
      if (routing::PodReady(pod)) ready.push_back(pod);
    }
    return ready;
  };
  ASSERT_TRUE(Eventually([&] { return routers().size() == 2; }, 60s, 200ms));

  std::string deleted;
  std::chrono::duration<double> gone{};
  std::thread change([&] {
    // Under load: both router pods have answered requests, as Prometheus saw it (the load
    // generator sends to every Ready one).
    EXPECT_TRUE(Eventually(
        [&] {
          return Query("count(sum by (pod) (pipescale_requests_total{" + Selector() + "}) > 20)",
                       "")[""] == 2;
        },
        60s, 500ms));
    deleted = routers().front()["metadata"]["name"];
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(client_->Delete(kube::ObjectPath(kube::kPods, ns_, deleted)).ok());
    EXPECT_TRUE(
        Eventually([&] { return !client_->Get(kube::ObjectPath(kube::kPods, ns_, deleted)).ok(); },
                   40s, 200ms));
    gone = std::chrono::steady_clock::now() - start;
  });
  const json report = Load("40:20", "named", {"--kubeconfig", LocalEnv::Get().Var("KUBECONFIG")});
  change.join();
  ASSERT_TRUE(report.is_object());
  const auto [sent, ok] = SentAndServed(report);
  EXPECT_GT(sent, 600);
  EXPECT_EQ(ok, sent) << report.dump();
  // Its drain (5 s, then what is in flight) ends long before the 30 s after which it would
  // have been killed: the router exited by itself.
  EXPECT_LT(gone.count(), 20) << deleted;
}

}  // namespace
}  // namespace pipescale
