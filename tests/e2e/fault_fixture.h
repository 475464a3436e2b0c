// The fixture of the fault tests on the local cluster (chaos_test.cc, control_plane_test.cc):
// the chain pipeline planned for a steady load before it comes, with two router replicas, its
// operator, the load generator logging every request, and the pods a fault is done to.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/json_fields.h"
#include "common/strings.h"
#include "e2e/chain_pipeline.h"
#include "integration/harness/local_env.h"
#include "integration/harness/process.h"
#include "integration/harness/wait.h"
#include "kube/client.h"
#include "routing/endpoints.h"
#include "support/shell.h"
#include "support/text.h"

namespace pipescale::testing {

// The load: steady; minRate plans for it before it comes (detect at two replicas, classify one).
inline constexpr double kRate = 20;
inline constexpr int kSeconds = 100;

inline double UnixMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Request {
  double sent_ms = 0, done_ms = 0;
  std::string router;
  int code = 0;
};

inline std::vector<Request> ReadRequests(const std::string& file) {
  std::vector<Request> out;
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string sent, done, router, path, code;
    if (std::getline(ss, sent, ',') && std::getline(ss, done, ',') &&
        std::getline(ss, router, ',') && std::getline(ss, path, ',') && std::getline(ss, code)) {
      out.push_back({std::stod(sent), std::stod(done), router, std::stoi(code)});
    }
  }
  return out;
}

// The share of the requests sent in [from_ms, to_ms) answered 200 within path p's SLO, as the
// client timed them; 1 when none was sent.
inline double WithinSlo(const std::vector<Request>& all, double from_ms, double to_ms) {
  int sent = 0, within = 0;
  for (const Request& r : all) {
    if (r.sent_ms < from_ms || r.sent_ms >= to_ms) continue;
    ++sent;
    within += r.code == 200 && r.done_ms - r.sent_ms <= kChainSloMs ? 1 : 0;
  }
  return sent == 0 ? 1 : static_cast<double>(within) / sent;
}

// One fault as done: when, to which router address ("" for none), and whether it was a kill.
struct Fault {
  std::string name;
  double at_ms = 0;
  std::string router;
  bool may_lose_in_flight = false;
  // When a killed process was gone (its listener closed): it dies some milliseconds after the
  // signal, on a loaded machine tens of them, and a request sent to it meanwhile was in flight
  // on it as much as one sent just before.
  double gone_ms = 0;
  double whole_again_s =
      -1;  // until detect and the router had two Ready pods again; 0: never short
  // Every pod of a task lost (0: not this fault): when one was Ready again. Until the apiserver
  // says they are not Ready (`down_ms`, as this test polls it, plus kWatchLagMs for the router's
  // watch), the router still sends them calls, which then wait at the task for a pod's return;
  // after, the router holds what comes at the door until a pod is back.
  double outage_end_ms = 0;
  double down_ms = 0;
  bool outage() const { return outage_end_ms > 0; }
  // The control plane's fault: the requests sent until the next fault keep kHeldWithinSlo.
  bool slo_held = false;
};

// How long the router's Pod watch may trail this test's look at the apiserver (a 50 ms poll
// against a watch's push): a request sent meanwhile may still find the old table.
inline constexpr double kWatchLagMs = 250;

// Where the control plane fails, the share of the requests within the SLO the data plane keeps
// (issue 48's goal).
inline constexpr double kHeldWithinSlo = 0.99;

class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!LocalEnv::Available()) GTEST_SKIP() << "needs the local cluster (ctest fixture local_env)";
    client_ = std::make_unique<kube::Client>(env().Config());
    ns_ = env().FreshNamespace(*client_);
    dir_ = ::testing::TempDir() + "/faults-" + ns_;
    std::filesystem::create_directories(dir_);
  }

  static const LocalEnv& env() { return LocalEnv::Get(); }

  nlohmann::json Pods(const std::string& selector) const {
    auto pods = client_->Get("/api/v1/namespaces/" + ns_ +
                             "/pods?labelSelector=" + kube::QueryEscape(selector));
    return pods.ok() ? (*pods)["items"] : nlohmann::json::array();
  }
  int ReadyPods(const std::string& selector) const {
    int n = 0;
    for (const nlohmann::json& pod : Pods(selector)) n += routing::PodReady(pod) ? 1 : 0;
    return n;
  }
  // detect (planned two replicas for the load) and the router with at least two Ready pods (and
  // whatever else `whole_` lists), and no pod of theirs leaving but on a lost node (`lost_node_`),
  // where an evicted pod stays until the node returns.
  bool Whole() const {
    for (const std::string& selector : whole_) {
      if (ReadyPods(selector) < 2) return false;
      for (const nlohmann::json& pod : Pods(selector)) {
        const bool lost = !lost_node_.empty() && pod["spec"].value("nodeName", "") == lost_node_;
        if (pod["metadata"].contains("deletionTimestamp") && !lost) return false;
      }
    }
    return true;
  }
  // A Ready pod of `selector`: its name and address.
  std::pair<std::string, std::string> ReadyPod(const std::string& selector) const {
    for (const nlohmann::json& pod : Pods(selector)) {
      if (routing::PodReady(pod)) {
        return {pod["metadata"].value("name", ""), pod["status"].value("podIP", "")};
      }
    }
    return {};
  }
  // The process listening on `ip`:8080 (a model server's or a router's), killed as a crash is;
  // the fault's instant is the kill's.
  bool KillListener(const std::string& ip, Fault& fault) const {
    return KillListeners({ip}, fault);
  }
  // The same for each of `ips` at once: the fault's instant is the first kill's, and it is gone
  // once every listener has closed.
  bool KillListeners(const std::vector<std::string>& ips, Fault& fault) const {
    std::vector<std::string> pids;
    for (const std::string& ip : ips) pids.push_back(ListenerPid(ip));
    fault.at_ms = UnixMs();
    for (const std::string& pid : pids) {
      if (pid.empty() || kill(std::atoi(pid.c_str()), SIGKILL) != 0) return false;
    }
    const bool gone = Eventually(
        [&] {
          for (size_t i = 0; i < ips.size(); ++i) {
            if (ListenerPid(ips[i]) == pids[i]) return false;
          }
          return true;
        },
        std::chrono::seconds(10), std::chrono::milliseconds(5));
    fault.gone_ms = UnixMs();
    return !ips.empty() && gone;
  }
  // The router Deployment's pods replaced one by one, as `kubectl rollout restart` does: a new
  // template annotation.
  bool RestartRouters() const {
    const nlohmann::json patch = {
        {"spec",
         {{"template",
           {{"metadata",
             {{"annotations",
               {{"kubectl.kubernetes.io/restartedAt", std::to_string(UnixMs())}}}}}}}}}};
    return client_->MergePatch(kube::ObjectPath(kube::kDeployments, ns_, "faults-router"), patch)
        .ok();
  }
  // The router Deployment's rollout is over: every replica of the current template Ready, no
  // old one left.
  bool RoutersRolledOut() const {
    auto d = client_->Get(kube::ObjectPath(kube::kDeployments, ns_, "faults-router"));
    if (!d.ok()) return false;
    const nlohmann::json& status = Member(*d, "status");
    const int want = IntField(Member(*d, "spec"), "replicas", -1);
    return IntField(Member(*d, "metadata"), "generation", -1) <=
               IntField(status, "observedGeneration", -2) &&
           IntField(status, "updatedReplicas", 0) == want &&
           IntField(status, "availableReplicas", 0) == want &&
           IntField(status, "replicas", 0) == want;
  }
  // Deleted as a rolling update or a scale-down deletes a pod: SIGTERM, then its grace period.
  bool DeletePod(const std::string& name) const {
    return client_->Delete(kube::ObjectPath(kube::kPods, ns_, name)).ok();
  }

  // The operator's command line; `elected`: one of replicas that elect a leader by a Lease in
  // the namespace (the chart's replicas: 2), the others standing by.
  std::vector<std::string> OperatorCommand(bool elected) const {
    std::vector<std::string> args = OperatorArgs(env(), ns_);
    if (elected) {
      args.insert(args.end(), {"--leader-elect=true", "--leader-election-namespace", ns_,
                               "--leader-election-id", kLease});
    }
    return args;
  }
  // The pid in the Lease's holder identity (host_pid), 0 when none holds it.
  pid_t LeaseHolder() const {
    auto lease = client_->Get(kube::ObjectPath(kube::kLeases, ns_, kLease));
    if (!lease.ok()) return 0;
    const std::string holder = StringField(Member(*lease, "spec"), "holderIdentity");
    const size_t at = holder.rfind('_');
    return at == std::string::npos ? 0 : std::atoi(holder.c_str() + at + 1);
  }

  // The chain planned for kRate; `class_fields` go into its hardware class.
  std::string PipelineYaml(const std::string& class_fields = ", startupSeconds: 1") const {
    // The router as by default: two replicas, so that one may fail.
    return ChainPipeline("faults", ns_, env().Var("PIPESCALE_PROMETHEUS"), class_fields,
                         "  minRate: " + std::to_string(kRate) + "\n");
  }
  // The pipeline (`yaml`, default PipelineYaml()) applied and its operator started (`elected`:
  // as OperatorCommand); nullptr unless the pipeline comes whole (Whole()).
  std::unique_ptr<Process> StartPipeline(bool elected = false, const std::string& yaml = "") {
    pipeline_file_ = dir_ + "/pipeline.yaml";
    std::ofstream(pipeline_file_) << (yaml.empty() ? PipelineYaml() : yaml);
    auto op = std::make_unique<Process>(OperatorCommand(elected), dir_ + "/operator.log");
    if (!KubectlApply(env(), pipeline_file_)) return nullptr;
    if (!Eventually([&] { return Whole(); }, std::chrono::seconds(120),
                    std::chrono::milliseconds(500))) {
      ADD_FAILURE() << "not whole: " << Pods("pipescale.io/pipeline").dump() << op->Log();
      return nullptr;
    }
    return op;
  }
  // kRate requests/s for `seconds` through the routers, each logged to `requests`.
  Process StartLoad(int seconds, const std::string& requests) const {
    return Process(
        {PIPESCALE_LOADGEN, "-f", pipeline_file_, "--kubeconfig", env().Var("KUBECONFIG"),
         "--trace", StrFormat("%g:%d", kRate, seconds), "--wait-ready", "60", "--requests",
         requests, "--report", dir_ + "/report.json"},
        dir_ + "/loadgen.log");
  }
  // Whether the trace started.
  static bool LoadStarted(const Process& load) {
    return Eventually([&] { return load.Log().find("requests/s for") != std::string::npos; },
                      std::chrono::seconds(90), std::chrono::milliseconds(100));
  }

  static constexpr const char* kLease = "pipescale-operator";
  std::unique_ptr<kube::Client> client_;
  std::string ns_, dir_, pipeline_file_;
  std::vector<std::string> whole_ = {"pipescale.io/task=detect", "pipescale.io/router"};
  std::string lost_node_;
};

}  // namespace pipescale::testing
