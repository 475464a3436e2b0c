// The control plane's faults do not reach the request path (issue 48): under a steady load the
// plan serves, Prometheus is away for 60 s and then the apiserver for 10 s. The routers serve on
// with the pods and routing they know, so no request is lost; and the operator, blind while
// Prometheus is away, scales nothing down (it holds, as for any missing metric). Runs alone
// (RUN_SERIAL): both outages would break every other test's connections.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <thread>

#include "e2e/fault_fixture.h"
#include "integration/harness/events.h"

namespace pipescale::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr int kPrometheusAwaySeconds = 60;
constexpr int kApiserverAwaySeconds = 10;

// Each model Deployment's replicas as the operator last wrote them; empty when unreadable.
std::map<std::string, int> Replicas(const kube::Client& client, const std::string& ns) {
  std::map<std::string, int> out;
  auto list = client.Get("/apis/apps/v1/namespaces/" + ns +
                         "/deployments?labelSelector=" + kube::QueryEscape("pipescale.io/task"));
  if (!list.ok()) return out;
  for (const json& d : (*list)["items"]) {
    out[d["metadata"].value("name", "")] = d["spec"].value("replicas", 0);
  }
  return out;
}

TEST_F(FaultTest, PrometheusAndTheApiserverAwayCostTheClientsNothingAndScaleNothingDown) {
  auto op = StartPipeline();
  ASSERT_TRUE(op);
  const int seconds = 8 + kPrometheusAwaySeconds + 8 + kApiserverAwaySeconds + 8;
  const std::string requests = dir_ + "/requests.csv";
  Process load = StartLoad(seconds, requests);
  ASSERT_TRUE(LoadStarted(load)) << load.Log();
  const double started_ms = UnixMs();
  std::this_thread::sleep_for(8s);  // the load's steady start, not a wait for a condition
  const std::map<std::string, int> before = Replicas(*client_, ns_);
  ASSERT_FALSE(before.empty());

  // Prometheus away: the Deployments' replicas, read every half second, never fall below what
  // they were.
  std::map<std::string, int> least = before;
  const double prometheus_away_ms = UnixMs();
  std::thread outage([&] {
    EXPECT_EQ(env().Script("outage " + env().Var("PIPESCALE_DIR") + " prometheus " +
                           std::to_string(kPrometheusAwaySeconds)),
              0);
  });
  const auto back = std::chrono::steady_clock::now() + std::chrono::seconds(kPrometheusAwaySeconds);
  while (std::chrono::steady_clock::now() < back) {
    for (const auto& [name, n] : Replicas(*client_, ns_)) {
      least[name] = std::min(least.contains(name) ? least[name] : n, n);
    }
    std::this_thread::sleep_for(500ms);
  }
  outage.join();
  for (const auto& [name, n] : before) {
    EXPECT_GE(least[name], n) << name << " scaled down while Prometheus was away";
  }
  std::this_thread::sleep_for(8s);  // the load with Prometheus back, before the next outage
  const double apiserver_away_ms = UnixMs();
  EXPECT_EQ(env().Script("outage " + env().Var("PIPESCALE_DIR") + " apiserver " +
                         std::to_string(kApiserverAwaySeconds)),
            0);
  ASSERT_EQ(load.Stop(0, 120s), 0) << load.Log();

  const std::vector<Request> all = ReadRequests(requests);
  EXPECT_GT(all.size(), static_cast<size_t>(0.9 * kRate * seconds));
  int lost = 0;
  for (const Request& r : all) {
    if (r.code == 200) continue;
    if (++lost <= 10) {
      ADD_FAILURE() << "request sent " << (r.sent_ms - started_ms) / 1000 << " s into the load to "
                    << r.router << " answered " << r.code;
    }
  }
  // Within the SLO while each was away and until the next (the load's end).
  const double prometheus_within = WithinSlo(all, prometheus_away_ms, apiserver_away_ms);
  const double apiserver_within = WithinSlo(all, apiserver_away_ms, started_ms + 1e3 * seconds);
  std::printf(
      "%zu requests, %d lost; Prometheus away from 8 s for %d s (%.1f%% within the SLO until the "
      "apiserver's outage), the apiserver from %.1f s for %d s (%.1f%% within the SLO from it)\n",
      all.size(), lost, kPrometheusAwaySeconds, 100 * prometheus_within,
      (apiserver_away_ms - started_ms) / 1000, kApiserverAwaySeconds, 100 * apiserver_within);
  EXPECT_GE(prometheus_within, kHeldWithinSlo);
  EXPECT_GE(apiserver_within, kHeldWithinSlo);
  if (lost > 0) ADD_FAILURE() << load.Log() << EventsOf(*client_, ns_) << op->Log();
  EXPECT_EQ(op->Stop(SIGTERM, 10s), 0) << op->Log();
}

}  // namespace
}  // namespace pipescale::testing
