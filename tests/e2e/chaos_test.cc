// Faults in the request path on the local cluster, one at a time under a steady load the plan
// serves, every part real (issue 48): a model pod deleted (SIGTERM) and one killed (SIGKILL), the
// operator killed and started again, a router pod deleted and a router's process killed. The
// load generator reaches the routers as a client behind their Service does and logs every
// request; the test holds each fault to what it may cost the clients: nothing for a deletion, a
// dead operator or a model pod whose task has another Ready pod, and for a killed router at most
// the requests in flight on it at that instant (each lost request is one of them). The table of
// faults, requests lost and in flight is printed.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "common/strings.h"
#include "e2e/chain_pipeline.h"
#include "integration/harness/events.h"
#include "integration/harness/local_env.h"
#include "integration/harness/process.h"
#include "integration/harness/wait.h"
#include "kube/client.h"
#include "reconciler/reconciler.h"
#include "routing/endpoints.h"
#include "support/shell.h"

namespace pipescale {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::LocalEnv;
using testing::Process;
using namespace std::chrono_literals;

// The load: steady; minRate plans for it before it comes (detect at two replicas, classify one).
constexpr double kRate = 20;
constexpr int kSeconds = 70;

double UnixMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Request {
  double sent_ms = 0, done_ms = 0;
  std::string router;
  int code = 0;
};

std::vector<Request> ReadRequests(const std::string& file) {
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

// One fault as done: when, to which router address ("" for none), and whether it was a kill.
struct Fault {
  std::string name;
  double at_ms = 0;
  std::string router;
  bool may_lose_in_flight = false;
};

class ChaosTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!LocalEnv::Available()) GTEST_SKIP() << "needs the local cluster (ctest fixture local_env)";
    client_ = std::make_unique<kube::Client>(env().Config());
    ns_ = env().FreshNamespace(*client_);
    dir_ = ::testing::TempDir() + "/chaos-" + ns_;
    std::filesystem::create_directories(dir_);
  }

  static const LocalEnv& env() { return LocalEnv::Get(); }

  json Pods(const std::string& selector) const {
    auto pods = client_->Get("/api/v1/namespaces/" + ns_ +
                             "/pods?labelSelector=" + kube::QueryEscape(selector));
    return pods.ok() ? (*pods)["items"] : json::array();
  }
  int ReadyPods(const std::string& selector) const {
    int n = 0;
    for (const json& pod : Pods(selector)) n += routing::PodReady(pod) ? 1 : 0;
    return n;
  }
  // detect (planned two replicas for the load) and the router with at least two Ready pods, and
  // no pod of theirs leaving.
  bool Whole() const {
    for (const char* selector : {"pipescale.io/task=detect", "pipescale.io/router"}) {
      if (ReadyPods(selector) < 2) return false;
      for (const json& pod : Pods(selector)) {
        if (pod["metadata"].contains("deletionTimestamp")) return false;
      }
    }
    return true;
  }
  // A Ready pod of `selector`: its name and address.
  std::pair<std::string, std::string> ReadyPod(const std::string& selector) const {
    for (const json& pod : Pods(selector)) {
      if (routing::PodReady(pod)) {
        return {pod["metadata"].value("name", ""), pod["status"].value("podIP", "")};
      }
    }
    return {};
  }
  // The process listening on `ip`:8080 (a model server's or a router's), killed as a crash is;
  // the fault's instant is the kill's.
  bool KillListener(const std::string& ip, Fault& fault) const {
    const std::string pid =
        testing::RunShell("ss -Hltnp src " + ip + ":8080 | sed -n 's/.*pid=\\([0-9]*\\).*/\\1/p'")
            .out;
    fault.at_ms = UnixMs();
    return !pid.empty() && kill(std::atoi(pid.c_str()), SIGKILL) == 0;
  }
  // Deleted as a rolling update or a scale-down deletes a pod: SIGTERM, then its grace period.
  bool DeletePod(const std::string& name) const {
    return client_->Delete(kube::ObjectPath(kube::kPods, ns_, name)).ok();
  }

  std::unique_ptr<kube::Client> client_;
  std::string ns_, dir_;
};

TEST_F(ChaosTest, EachFaultCostsTheClientsAtMostWhatWasInFlightOnAKilledRouter) {
  const std::string file = dir_ + "/pipeline.yaml";
  std::ofstream(file) << testing::ChainPipeline("chaos", ns_, env().Var("PIPESCALE_PROMETHEUS"),
                                                ", startupSeconds: 1",
                                                "  minRate: " + std::to_string(kRate) + "\n");
  auto op = std::make_unique<Process>(testing::OperatorArgs(env(), ns_), dir_ + "/operator.log");
  ASSERT_TRUE(testing::KubectlApply(env(), file));
  ASSERT_TRUE(Eventually([&] { return Whole(); }, 120s, 500ms))
      << Pods("pipescale.io/pipeline").dump() << op->Log();
  // The router's budget lets a drain take one replica at a time.
  auto budget =
      client_->Get("/apis/policy/v1beta1/namespaces/" + ns_ + "/poddisruptionbudgets/chaos-router");
  ASSERT_TRUE(budget.ok()) << budget.error().message;
  EXPECT_EQ((*budget)["spec"]["maxUnavailable"], 1);

  const std::string requests = dir_ + "/requests.csv";
  Process load({PIPESCALE_LOADGEN, "-f", file, "--kubeconfig", env().Var("KUBECONFIG"), "--trace",
                StrFormat("%g:%d", kRate, kSeconds), "--wait-ready", "60", "--requests", requests,
                "--report", dir_ + "/report.json"},
               dir_ + "/loadgen.log");
  ASSERT_TRUE(Eventually([&] { return load.Log().find("requests/s for") != std::string::npos; },
                         90s, 100ms))
      << load.Log();
  const double started_ms = UnixMs();

  // Each fault once the pipeline is whole again and 8 s after the last, so the faults stay apart.
  std::vector<Fault> faults;
  const auto next = [&](const std::string& name, const std::function<bool(Fault&)>& act) {
    const double due = faults.empty() ? started_ms + 8000 : faults.back().at_ms + 8000;
    ASSERT_TRUE(Eventually([&] { return UnixMs() >= due && Whole(); }, 60s, 200ms))
        << "not whole again before " << name << ": " << Pods("pipescale.io/pipeline").dump();
    Fault fault{.name = name, .at_ms = UnixMs()};
    ASSERT_TRUE(act(fault)) << name;
    faults.push_back(fault);
  };
  next("model pod deleted (SIGTERM)",
       [&](Fault&) { return DeletePod(ReadyPod("pipescale.io/task=detect").first); });
  next("model pod killed (SIGKILL)", [&](Fault& fault) {
    return KillListener(ReadyPod("pipescale.io/task=detect").second, fault);
  });
  next("operator killed (SIGKILL), started again 5 s later", [&](Fault&) {
    op->Stop(SIGKILL, 5s);
    std::this_thread::sleep_for(5s);  // the fault's length, not a wait for a condition
    op = std::make_unique<Process>(testing::OperatorArgs(env(), ns_), dir_ + "/operator-2.log");
    return true;
  });
  next("router pod deleted (SIGTERM)",
       [&](Fault&) { return DeletePod(ReadyPod("pipescale.io/router").first); });
  next("router killed (SIGKILL)", [&](Fault& fault) {
    const auto [name, ip] = ReadyPod("pipescale.io/router");
    fault.router = ip + ":8080";
    fault.may_lose_in_flight = true;
    return KillListener(ip, fault);
  });
  ASSERT_EQ(load.Stop(0, 150s), 0) << load.Log();
  EXPECT_LT(faults.back().at_ms, started_ms + 1000.0 * (kSeconds - 5))
      << "the last fault came after the load";

  const std::vector<Request> all = ReadRequests(requests);
  EXPECT_GT(all.size(), static_cast<size_t>(0.9 * kRate * kSeconds));
  // Each request not answered 200 is charged to the fault whose instant it spans (sent before,
  // answered after) on the router that fault killed; any other is lost without excuse.
  std::vector<int> lost(faults.size(), 0), in_flight(faults.size(), 0);
  int unexcused = 0;
  for (const Request& r : all) {
    bool excused = false;
    for (size_t f = 0; f < faults.size(); ++f) {
      const Fault& fault = faults[f];
      const bool spans = fault.may_lose_in_flight && r.router == fault.router &&
                         r.sent_ms <= fault.at_ms && r.done_ms >= fault.at_ms;
      in_flight[f] += spans ? 1 : 0;
      if (r.code != 200 && spans) {
        ++lost[f];
        excused = true;
      }
    }
    if (r.code != 200 && !excused) {
      ++unexcused;
      ADD_FAILURE() << "request sent " << (r.sent_ms - started_ms) / 1000 << " s into the load to "
                    << r.router << " answered " << r.code << " (" << (r.done_ms - r.sent_ms)
                    << " ms)";
    }
  }
  std::printf("%-52s %10s %5s %10s\n", "fault", "at", "lost", "in flight");
  for (size_t f = 0; f < faults.size(); ++f) {
    std::printf("%-52s %8.1f s %5d %10s\n", faults[f].name.c_str(),
                (faults[f].at_ms - started_ms) / 1000, lost[f],
                faults[f].may_lose_in_flight ? std::to_string(in_flight[f]).c_str() : "-");
  }
  std::printf("requests: %zu, lost outside a killed router's in-flight: %d\n", all.size(),
              unexcused);
  if (unexcused > 0) ADD_FAILURE() << load.Log() << testing::EventsOf(*client_, ns_);
  EXPECT_EQ(op->Stop(SIGTERM, 10s), 0) << op->Log();
}

}  // namespace
}  // namespace pipescale
