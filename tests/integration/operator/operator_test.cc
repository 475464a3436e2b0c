// The pipescale-operator process against the local cluster: it follows a load step up and
// down within a few intervals, serves health, readiness and metrics, hands leadership over
// through the Lease, stops cleanly on SIGTERM, and survives a Prometheus that answers garbage.
#include <gtest/gtest.h>
#include <prometheus/gauge.h>
#include <signal.h>

#include <atomic>
#include <thread>

#include "api/deployment.h"
#include "api/deployment_view.h"
#include "integration/harness/cluster_test.h"
#include "integration/harness/load.h"
#include "integration/harness/local_env.h"
#include "integration/harness/process.h"
#include "integration/harness/wait.h"
#include "integration/operator/operator_process.h"
#include "kube/client.h"
#include "metrics/prometheus.h"
#include "reconciler/conditions.h"
#include "reconciler/reconciler.h"
#include "support/fake_http_server.h"
#include "support/pipelines.h"

namespace pipescale {
namespace {

using testing::Eventually;

using nlohmann::json;
using testing::LocalEnv;
using testing::Process;
using namespace std::chrono_literals;

json Pipeline(const std::string& name = "shop",
              const std::string& prometheus_url = LocalEnv::Get().Var("PIPESCALE_PROMETHEUS")) {
  return testing::ShopPipelineOnCluster(name, prometheus_url);
}

class OperatorTest : public testing::ClusterTest {
 protected:
  json Status(const std::string& name = "shop") {
    auto o = client_->Get(kube::ObjectPath(reconciler::kInferencePipelines, ns_, name));
    return o.ok() ? o->value("status", json::object()) : json::object();
  }

  // True when every Deployment matches the plan in status and the measured rate is near `rps`.
  bool FollowsPlanAt(double rps) {
    const json status = Status();
    if (!status.contains("plan")) return false;
    const double measured = status["observed"]["pathRates"].value("p", -1.0);
    if (std::abs(measured - rps) > 0.25 * rps) return false;
    for (const auto& t : status["plan"]["tasks"]) {
      auto d = client_->Get(kube::ObjectPath(kube::kDeployments, ns_, t["deployment"]));
      if (!d.ok()) return false;
      const auto f = api::ReadManagedFields(api::ReadDeployment(*d), "MAX_BATCH_SIZE");
      if (f.replicas != t["replicas"].get<int>() || f.batch_size != t["batchSize"].get<int>()) {
        return false;
      }
    }
    return true;
  }
};

TEST_F(OperatorTest, FollowsALoadStepAndStopsCleanly) {
  testing::Load load(ns_, "shop", {{"p", 30}});
  OperatorProcess op(ns_, "operator");
  ASSERT_TRUE(Eventually([&] { return op.Serving(); }, 20s)) << op.process().Log();
  EXPECT_EQ(op.Healthy(), 200);
  ASSERT_TRUE(
      client_->Create(kube::CollectionPath(reconciler::kInferencePipelines, ns_), Pipeline()).ok());

  // Metrics need ~10 s to appear the first time (target discovery, rate window); after that,
  // each load step must show in the Deployments within the metrics lag plus two intervals.
  ASSERT_TRUE(Eventually([&] { return FollowsPlanAt(30); }, 40s)) << Status().dump();
  const int low = Status()["totalReplicas"];
  EXPECT_EQ(reconciler::ConditionStatus(Status()["conditions"], "Ready"), "True");

  load.SetRate("p", 300);
  ASSERT_TRUE(Eventually([&] { return FollowsPlanAt(300); }, 5s + 6s + 4s)) << Status().dump();
  const int high = Status()["totalReplicas"];
  EXPECT_GT(high, low);

  load.SetRate("p", 30);
  ASSERT_TRUE(Eventually([&] { return FollowsPlanAt(30); }, 5s + 6s + 4s)) << Status().dump();
  EXPECT_LT(Status()["totalReplicas"].get<int>(), high);

  const std::string metrics = op.Metrics();
  EXPECT_NE(metrics.find("controller_runtime_reconcile_total{controller=\"inferencepipeline\""),
            std::string::npos);
  EXPECT_NE(metrics.find("pipescale_desired_replicas{"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("pipescale_predicted_latency_ms{"), std::string::npos);
  EXPECT_NE(metrics.find("pipescale_path_headroom{"), std::string::npos) << "FA2's, by path";
  // One replicas series per task of the plan in effect: the plans before left none behind.
  size_t replica_series = 0;
  for (size_t at = metrics.find("\npipescale_desired_replicas{"); at != std::string::npos;
       at = metrics.find("\npipescale_desired_replicas{", at + 1)) {
    ++replica_series;
  }
  EXPECT_EQ(replica_series, Status()["plan"]["tasks"].size()) << metrics;
  EXPECT_NE(metrics.find("type=\"Ready\"} 1"), std::string::npos) << metrics;
  // The last decision was within the last few intervals (2 s here), not at the start.
  const size_t decided = metrics.find("pipescale_last_decision_timestamp_seconds{");
  ASSERT_NE(decided, std::string::npos) << metrics;
  const size_t value = metrics.find("} ", decided);
  const double age =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() -
      std::stod(metrics.substr(value + 2, metrics.find('\n', value) - value - 2));
  EXPECT_GE(age, -1);
  EXPECT_LT(age, 10) << metrics;

  EXPECT_EQ(op.process().Stop(SIGTERM, 10s), 0) << op.process().Log();
  auto lease = client_->Get(kube::ObjectPath(kube::kLeases, ns_, "pipescale-operator"));
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)["spec"].value("holderIdentity", "x"), "");  // released on the way out
}

TEST_F(OperatorTest, OneLeaderAtATime) {
  OperatorProcess first(ns_, "first");
  ASSERT_TRUE(Eventually([&] { return first.Serving(); }, 20s)) << first.process().Log();
  OperatorProcess second(ns_, "second");
  ASSERT_TRUE(Eventually([&] { return second.Healthy() == 200; }, 20s));
  // Two renewals of the Lease by the first since then: the second, asking for it at the same
  // 2 s period, was refused at least once.
  const auto renewed = [&] {
    auto lease = client_->Get(kube::ObjectPath(kube::kLeases, ns_, "pipescale-operator"));
    return lease.ok() ? (*lease)["spec"].value("renewTime", "") : "";
  };
  std::string last_renewal = renewed();
  int renewals = 0;
  EXPECT_TRUE(Eventually(
      [&] {
        if (const std::string r = renewed(); r != last_renewal) {
          ++renewals;
          last_renewal = r;
        }
        return renewals >= 2;
      },
      20s, 100ms));
  // Ready to take over (so a rolling update of the operator never waits on the Lease), but
  // not leading.
  EXPECT_EQ(second.Ready(), 200);
  EXPECT_FALSE(second.Serving()) << second.Metrics();
  EXPECT_TRUE(first.Serving());
  EXPECT_EQ(first.process().Stop(SIGTERM, 10s), 0) << first.process().Log();
  EXPECT_TRUE(Eventually([&] { return second.Serving(); }, 15s)) << second.process().Log();
  EXPECT_EQ(second.process().Stop(SIGTERM, 10s), 0) << second.process().Log();
}

// Answers a real Prometheus never sends, but a proxy or a "compatible" backend may: a page
// with status 200 (with a control character and bytes that are not UTF-8), a cut transfer, a
// cut body, a matrix for an instant query, and wrong shapes.
std::vector<std::string> MalformedAnswers() {
  const auto vector = [](const std::string& items) {
    return testing::HttpResponse(
        200, "application/json",
        R"({"status":"success","data":{"resultType":"vector","result":[)" + items + "]}}");
  };
  return {
      testing::HttpResponse(200, "text/html", "<html>\x01Sign in \xff\xfe</html>"),
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n"
      R"({"status":"success","data":{)",
      testing::HttpResponse(200, "application/json", R"({"status":"success","data":{"resul)"),
      testing::HttpResponse(
          200, "application/json",
          R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"]]}]}})"),
      vector(R"({"metric":{"path":7},"value":[1700000000,"1"]})"),
      testing::HttpResponse(200, "application/json",
                            R"({"status":"success","data":{"resultType":"vector","result":{}}})"),
      vector(R"({"metric":{},"value":["1700000000","1"]})"),
      vector(R"({"metric":{},"value":[1700000000,"fast"]})"),
  };
}

std::string ConditionMessage(const json& status, const std::string& type) {
  for (const auto& c : status.value("conditions", json::array())) {
    if (c.value("type", "") == type) return c.value("message", "");
  }
  return "";
}

TEST_F(OperatorTest, AHostilePrometheusCostsOnlyItsOwnPipeline) {
  const std::vector<std::string> answers = MalformedAnswers();
  std::atomic<size_t> next{0};
  testing::FakeHttpServer fake(
      [&](const testing::FakeHttpServer::Request&) { return answers[next++ % answers.size()]; });
  ASSERT_TRUE(fake.ok());
  testing::Load load(ns_, "shop", {{"p", 30}});
  OperatorProcess op(ns_, "operator");
  ASSERT_TRUE(Eventually([&] { return op.Serving(); }, 20s)) << op.process().Log();
  const auto pipelines = kube::CollectionPath(reconciler::kInferencePipelines, ns_);
  ASSERT_TRUE(client_->Create(pipelines, Pipeline("hostile", fake.url())).ok());

  // The pipeline is reconciled again every interval; each time it gets the next bad answer.
  ASSERT_TRUE(Eventually([&] { return fake.requests() > static_cast<int>(answers.size()); }, 40s))
      << fake.requests() << " requests\n"
      << op.process().Log();
  ASSERT_TRUE(op.process().Running()) << op.process().Log();
  const json hostile = Status("hostile");
  EXPECT_EQ(reconciler::ConditionStatus(hostile["conditions"], "MetricsAvailable"), "False")
      << hostile.dump();
  EXPECT_EQ(ConditionMessage(hostile, "MetricsAvailable").rfind("metrics.pathRate: prometheus", 0),
            0u)
      << hostile.dump();

  // A pipeline created after the hostile one is still served.
  ASSERT_TRUE(client_->Create(pipelines, Pipeline()).ok());
  ASSERT_TRUE(Eventually([&] { return FollowsPlanAt(30); }, 40s)) << Status().dump();
  EXPECT_EQ(reconciler::ConditionStatus(Status()["conditions"], "MetricsAvailable"), "True");
  // The parser turned every answer into an error: the last-resort guard never fired.
  EXPECT_NE(
      op.Metrics().find("pipescale_reconcile_panics_total{controller=\"inferencepipeline\"} 0"),
      std::string::npos);
  EXPECT_EQ(op.process().Stop(SIGTERM, 10s), 0) << op.process().Log();
}

// Pipelines the CRD admits whose search spaces explode without the optimizers' work budgets:
// Loki over a 16-task chain with 3 variants a task (43 million variant paths), Kairos over 12
// hardware classes (13^12 count vectors).
json HostileChain() {
  json tasks = json::array();
  json chain = json::array();
  for (int i = 0; i < 16; ++i) {
    json variants = json::array();
    for (int k = 0; k < 3; ++k) {
      variants.push_back(
          {{"name", "v" + std::to_string(k)},
           {"accuracy", 0.9 - 0.1 * k},
           {"batchSize", {{"max", 8}}},
           {"profiles",
            json::array(
                {{{"hardwareClass", "cpu"},
                  {"latencyMs", {{"quadratic", {{"a", 0}, {"b", 1}, {"c", 5 + 5 * k}}}}}}})}});
    }
    json task = {{"name", "t" + std::to_string(i)}, {"variants", variants}};
    if (i < 15) task["next"] = json::array({{{"task", "t" + std::to_string(i + 1)}}});
    tasks.push_back(task);
    chain.push_back("t" + std::to_string(i));
  }
  json p = Pipeline("chain");
  p["spec"]["optimizer"] = "loki";
  p["spec"]["tasks"] = tasks;
  p["spec"]["hardwareClasses"] = json::array({{{"name", "cpu"}, {"costPerHour", 0.1}}});
  p["spec"]["budget"] = {{"maxReplicas", 20}};
  p["spec"]["paths"] = json::array({{{"name", "p"}, {"tasks", chain}, {"sloMs", 400}}});
  return p;
}

json HostileClasses() {
  json p = Pipeline("classes");
  p["spec"]["optimizer"] = "kairos";
  json classes = json::array();
  json profiles = json::array();
  for (int k = 0; k < 12; ++k) {
    const std::string name = "c" + std::to_string(k);
    classes.push_back({{"name", name}, {"costPerHour", 0.1 + 0.05 * k}, {"maxReplicas", 40}});
    profiles.push_back({{"hardwareClass", name},
                        {"latencyMs", {{"quadratic", {{"a", 0}, {"b", 1}, {"c", 20.0 - k}}}}}});
  }
  p["spec"]["hardwareClasses"] = classes;
  for (auto& task : p["spec"]["tasks"]) task["variants"][0]["profiles"] = profiles;
  return p;
}

// Two such pipelines under load cost the others nothing: each is planned within its budget,
// and a pipeline created after them is served as if they were not there.
TEST_F(OperatorTest, HostilePipelinesCostOnlyThemselves) {
  testing::Load chain_load(ns_, "chain", {{"p", 1000}});
  testing::Load classes_load(ns_, "classes", {{"p", 300}});
  testing::Load load(ns_, "shop", {{"p", 30}});
  OperatorProcess op(ns_, "operator");
  ASSERT_TRUE(Eventually([&] { return op.Serving(); }, 20s)) << op.process().Log();
  const auto pipelines = kube::CollectionPath(reconciler::kInferencePipelines, ns_);
  ASSERT_TRUE(client_->Create(pipelines, HostileChain()).ok());
  ASSERT_TRUE(client_->Create(pipelines, HostileClasses()).ok());
  ASSERT_TRUE(client_->Create(pipelines, Pipeline()).ok());

  ASSERT_TRUE(Eventually([&] { return FollowsPlanAt(30); }, 40s)) << Status().dump();
  for (const std::string name : {"chain", "classes"}) {
    ASSERT_TRUE(Eventually([&] { return Status(name).contains("plan"); }, 40s))
        << name << ": " << Status(name).dump() << op.process().Log();
    EXPECT_EQ(reconciler::ConditionStatus(Status(name)["conditions"], "Ready"), "True") << name;
  }
  // Each says what its budget cut short.
  EXPECT_TRUE(Eventually(
      [&] {
        return ConditionMessage(Status("chain"), "Feasible").find("variant paths") !=
               std::string::npos;
      },
      10s))
      << Status("chain").dump();
  EXPECT_EQ(Status("classes")["solver"].value("status", ""), "Feasible") << Status("classes");
  // Served while the hostile ones are planned again every interval.
  load.SetRate("p", 300);
  // The metrics lag, three intervals, and the rollouts: the hostile pipelines' pods share the
  // machine, and a batch change rolls real pods, one surge at a time, after the last one.
  EXPECT_TRUE(Eventually([&] { return FollowsPlanAt(300); }, 5s + 6s + 4s + 30s))
      << Status().dump();
  ASSERT_TRUE(op.process().Running()) << op.process().Log();
  EXPECT_NE(
      op.Metrics().find("pipescale_reconcile_panics_total{controller=\"inferencepipeline\"} 0"),
      std::string::npos);
  EXPECT_EQ(op.process().Stop(SIGTERM, 10s), 0) << op.process().Log();
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The replicas the pipeline's Deployments are set to, summed.
int SetReplicas(kube::Client& client, const std::string& ns) {
  auto list = client.Get(kube::CollectionPath(kube::kDeployments, ns));
  if (!list.ok()) return -1;
  int total = 0;
  for (const auto& d : (*list)["items"]) total += d["spec"].value("replicas", 0);
  return total;
}

std::string LeaseHolder(kube::Client& client, const std::string& ns) {
  auto lease = client.Get(kube::ObjectPath(kube::kLeases, ns, "pipescale-operator"));
  return lease.ok() ? (*lease)["spec"].value("holderIdentity", "") : "";
}

// The leader dies (SIGKILL: no Lease release) 45 s scale-down window after the load fell; the
// standby takes the Lease when it expires and, reading the window from the status, keeps the
// replicas until the window has passed. Starting from nothing it would scale down at once.
TEST_F(OperatorTest, ANewLeaderDoesNotScaleDownBeforeTheWindow) {
  constexpr double kWindowSeconds = 45;
  testing::Load load(ns_, "shop", {{"p", 300}});
  OperatorProcess first(ns_, "first");
  ASSERT_TRUE(Eventually([&] { return first.Serving(); }, 20s)) << first.process().Log();
  OperatorProcess second(ns_, "second");
  json pipeline = Pipeline();
  pipeline["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] = kWindowSeconds;
  ASSERT_TRUE(
      client_->Create(kube::CollectionPath(reconciler::kInferencePipelines, ns_), pipeline).ok());
  ASSERT_TRUE(Eventually([&] { return FollowsPlanAt(300); }, 40s)) << Status().dump();
  const int high = SetReplicas(*client_, ns_);

  load.SetRate("p", 30);
  // The leader has seen the drop once the last step of its recommendations asks for fewer
  // replicas (the steps of the ramp up to 300 rps are there too).
  auto last_step = [&] {
    const json steps =
        Status().value("memory", json::object()).value("recommendations", json::array());
    return steps.empty() ? json::object() : steps.back();
  };
  auto total = [](const json& step) {
    const json replicas = step.value("replicas", json::object());
    int n = 0;
    for (const auto& [name, count] : replicas.items()) n += count.get<int>();
    return n;
  };
  ASSERT_TRUE(Eventually([&] { return total(last_step()) > 0 && total(last_step()) < high; }, 20s))
      << Status().dump();
  const double low_since = last_step()["since"];
  ASSERT_EQ(first.process().Stop(SIGKILL, 5s), 128 + SIGKILL);
  const std::string holder = LeaseHolder(*client_, ns_);

  ASSERT_TRUE(Eventually([&] { return second.Serving(); }, 30s)) << second.process().Log();
  EXPECT_NE(LeaseHolder(*client_, ns_), holder);
  // The new leader reconciles every 2 s; until the window ends nothing may scale down.
  while (UnixNow() < low_since + kWindowSeconds - 3) {
    ASSERT_GE(SetReplicas(*client_, ns_), high) << Status().dump();
    std::this_thread::sleep_for(500ms);
  }
  // CI once saw no scale-down in these 20 s, with no trace of why: the new leader's log says.
  EXPECT_TRUE(Eventually([&] { return SetReplicas(*client_, ns_) < high; }, 20s))
      << "now " << UnixNow() << ", low since " << low_since << "\n"
      << Status().dump() << "\n"
      << second.process().Log();
  EXPECT_EQ(second.process().Stop(SIGTERM, 10s), 0) << second.process().Log();
}

// A surge is planned for within seconds whatever the interval: the operator's watch reads the
// routers' recent rates every 2 s and queues the pipeline whose recent rate is past the one its
// status reported. Here the interval is an hour, so nothing else would look again.
TEST_F(OperatorTest, ASurgeIsPlannedForWithinSecondsNotAtTheNextInterval) {
  testing::Load load(ns_, "shop", {{"p", 30}});
  auto& recent = prometheus::BuildGauge()
                     .Name("pipescale_router_recent_rate")
                     .Help("test")
                     .Register(load.registry())
                     .Add({{"namespace", ns_}, {"pipeline", "shop"}, {"path", "p"}});
  recent.Set(30);
  OperatorProcess op(ns_, "operator");
  ASSERT_TRUE(Eventually([&] { return op.Serving(); }, 20s)) << op.process().Log();
  // The first plan is the only one an hour's interval makes: it must read the load whole. Early
  // on Prometheus's 10 s rate is still climbing (CI once read 20.5 of 30), and from there a
  // steady 30 is no surge, so nothing would look again.
  const metrics::PrometheusClient prometheus(LocalEnv::Get().Var("PIPESCALE_PROMETHEUS"));
  ASSERT_TRUE(Eventually(
      [&] {
        auto rate = prometheus.Query("sum(rate(pipescale_requests_total{namespace=\"" + ns_ +
                                     "\",pipeline=\"shop\"}[10s]))");
        return rate.ok() && !rate->empty() && (*rate)[0].value > 27;
      },
      30s));
  json pipeline = Pipeline();
  pipeline["spec"]["interval"] = "1h";
  pipeline["spec"]["router"] = json::object();
  ASSERT_TRUE(
      client_->Create(kube::CollectionPath(reconciler::kInferencePipelines, ns_), pipeline).ok());
  ASSERT_TRUE(Eventually([&] { return FollowsPlanAt(30); }, 40s)) << Status().dump();
  // The looks of the first rise (every 2 s while the rate climbs to 30) are over.
  ASSERT_TRUE(Eventually(
      [&] {
        const int before = Status()["totalReplicas"];
        std::this_thread::sleep_for(3s);
        return Status()["totalReplicas"] == before;
      },
      30s));
  const int low = Status()["totalReplicas"];

  recent.Set(300);
  EXPECT_TRUE(Eventually([&] { return Status()["totalReplicas"].get<int>() > low; }, 15s))
      << Status().dump() << "\n"
      << op.process().Log();
  EXPECT_EQ(op.process().Stop(SIGTERM, 10s), 0) << op.process().Log();
}

// MArk forecasts from one rate per interval. Killed mid-ramp, the leader's successor rebuilds the
// series from Prometheus: its very first forecast already rises, where an empty history gives a
// flat one (two points make no trend) for several intervals. A forecast's rise is provisioned
// once 5 earlier ones proposed a rise and their horizon came (mark::ForecastTrust): with a 10 s
// horizon at 2 s intervals, about 20 intervals into the ramp.
TEST_F(OperatorTest, ANewMarkLeaderForecastsFromTheRatesPrometheusKept) {
  testing::Load load(ns_, "ramp", {{"p", 20}});
  json pipeline = Pipeline("ramp");
  pipeline["spec"]["optimizer"] = "mark";
  pipeline["spec"]["forecast"] = {{"method", "linear"}, {"horizon", "10s"}};
  OperatorProcess first(ns_, "first");
  ASSERT_TRUE(Eventually([&] { return first.Serving(); }, 20s)) << first.process().Log();
  OperatorProcess second(ns_, "second");
  ASSERT_TRUE(
      client_->Create(kube::CollectionPath(reconciler::kInferencePipelines, ns_), pipeline).ok());
  std::atomic<bool> ramping{true};
  std::thread ramp([&] {
    for (double rps = 20; ramping; rps += 2) {
      load.SetRate("p", rps);
      std::this_thread::sleep_for(1s);
    }
  });
  // Joined however the test ends: a failed assertion returns early.
  struct Joined {
    std::atomic<bool>& ramping;
    std::thread& ramp;
    ~Joined() {
      ramping = false;
      if (ramp.joinable()) ramp.join();
    }
  } joined{ramping, ramp};
  auto forecast = [&] {
    return Status("ramp")
        .value("plan", json::object())
        .value("forecast", json::object())
        .value("rps", json::array());
  };
  // A series long enough for a trend: the leader's own forecast rises by twice what its
  // successor's first one must.
  ASSERT_TRUE(Eventually(
      [&] {
        const json rps = forecast();
        return rps.size() > 2 && rps.back().get<double>() > rps.front().get<double>() + 4;
      },
      120s))
      << Status("ramp").dump();
  ASSERT_EQ(first.process().Stop(SIGKILL, 5s), 128 + SIGKILL);
  const json before = Status("ramp");
  ASSERT_TRUE(Eventually([&] { return second.Serving(); }, 30s)) << second.process().Log();
  // The first status the new leader writes (the observed rate changes every interval).
  ASSERT_TRUE(Eventually([&] { return Status("ramp")["observed"] != before["observed"]; }, 10s));
  const json rps = forecast();
  ramping = false;
  ramp.join();
  ASSERT_GT(rps.size(), 2u) << Status("ramp").dump();
  EXPECT_GT(rps.back().get<double>(), rps.front().get<double>() + 2) << Status("ramp").dump();
  EXPECT_EQ(second.process().Stop(SIGTERM, 10s), 0) << second.process().Log();
}

TEST(OperatorFlags, BadFlagsExitTwo) {
  Process p({PIPESCALE_OPERATOR, "--log-format", "xml"}, ::testing::TempDir() + "/flags.log");
  EXPECT_EQ(p.Stop(0, 5s), 2);
  EXPECT_NE(p.Log().find("--log-format: must be text or json"), std::string::npos) << p.Log();
}

}  // namespace
}  // namespace pipescale
