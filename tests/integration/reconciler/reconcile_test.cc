// The reconciler against real parts: kube-apiserver + etcd (+ the garbage collector), and a
// real Prometheus reading request counters at rates the test sets.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "api/deployment.h"
#include "api/deployment_view.h"
#include "integration/harness/load.h"
#include "integration/harness/local_env.h"
#include "integration/harness/objects.h"
#include "integration/harness/wait.h"
#include "kube/discovery.h"
#include "metrics/source.h"
#include "reconciler/conditions.h"
#include "reconciler/reconciler.h"
#include "support/pipelines.h"

namespace pipescale::reconciler {
namespace {

using testing::Eventually;

using nlohmann::json;
using testing::LocalEnv;
using namespace std::chrono_literals;

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json PipelineObject(const std::string& name, const std::string& mode) {
  json object = testing::ShopPipelineOnCluster(name, LocalEnv::Get().Var("PIPESCALE_PROMETHEUS"));
  object["spec"]["mode"] = mode;
  // Requests on the pods, which the test reads back from the Deployment.
  object["spec"]["hardwareClasses"][0]["resources"] = {{"requests", {{"cpu", "500m"}}}};
  return object;
}

// One namespace, informers on it, and a reconciler that reads the real Prometheus.
class ReconcilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!LocalEnv::Available()) GTEST_SKIP() << "needs the local cluster (ctest fixture local_env)";
    client_ = std::make_unique<kube::Client>(LocalEnv::Get().Config());
    // The reconciler's own, so its requests are counted apart from the test's and the watches'.
    reconciler_client_ = std::make_unique<kube::Client>(LocalEnv::Get().Config());
    ns_ = LocalEnv::Get().FreshNamespace(*client_);
    pipelines_ = std::make_unique<PipelineInformer>(
        *client_, kube::InformerOptions{.type = kInferencePipelines, .namespace_name = ns_},
        api::ReadPipelineObject, [](const std::string&, const api::PipelineObject&) {});
    deployments_ =
        std::make_unique<DeploymentInformer>(*client_, DeploymentWatch(ns_), api::ReadDeployment,
                                             [](const std::string&, const api::DeploymentView&) {});
    owned_ = std::make_unique<OwnedObjects>(
        *client_, ns_,
        [this](const std::string& key) {
          std::lock_guard lock(adoption_mu_);
          adoption_changes_.push_back(key);
        },
        kube::FirstServedVersion(*client_, kDisruptionBudgetVersions));
    pipelines_->Start();
    deployments_->Start();
    owned_->Start();
    ASSERT_TRUE(pipelines_->WaitForSync(10s));
    ASSERT_TRUE(deployments_->WaitForSync(10s));
    ASSERT_TRUE(testing::Eventually([&] { return owned_->Synced(); }, 10s));
    reconciler_ = MakeReconciler(*deployments_);
  }

  std::unique_ptr<Reconciler> MakeReconciler(const DeploymentInformer& deployments,
                                             const PipelineInformer* pipelines = nullptr) {
    return std::make_unique<Reconciler>(
        *reconciler_client_, pipelines != nullptr ? *pipelines : *pipelines_, deployments, *owned_,
        [this](const model::Pipeline& p) -> Result<model::MetricsSnapshot> {
          if (frozen_) return *frozen_;
          auto snapshot = metrics::ReadSnapshot(metrics::PrometheusClient(prometheus_url_, 2s), p);
          if (snapshot.ok()) last_ = *snapshot;
          return snapshot;
        },
        Now,
        [this](const model::Pipeline& p, int intervals, double now) {
          return metrics::ReadRateHistory(metrics::PrometheusClient(prometheus_url_, 2s), p,
                                          intervals, now);
        });
  }

  void Create(const json& object) {
    auto created = client_->Create(kube::CollectionPath(kInferencePipelines, ns_), object);
    ASSERT_TRUE(created.ok()) << created.error().message;
    const std::string key = ns_ + "/" + object["metadata"]["name"].get<std::string>();
    ASSERT_TRUE(Eventually([&] { return pipelines_->Get(key) != nullptr; }, 10s));
  }

  // Reconciles until the metrics are in (Prometheus needs a few seconds for a new target) and
  // the measured rate has reached `min_rps` (the rate window fills over 5 s).
  Reconciler::Outcome ReconcileWithMetrics(const std::string& name, double min_rps = 0) {
    Reconciler::Outcome outcome;
    EXPECT_TRUE(Eventually(
        [&] {
          auto r = reconciler_->Reconcile(ns_ + "/" + name);
          EXPECT_TRUE(r.ok()) << r.error().message;
          if (!r.ok()) return false;
          outcome = *r;
          const json status = Status(name);
          // Real pods roll: a batch change decided while the rate window filled may still
          // wait for the one before it (BatchHeld); look again until it went out.
          bool rolling = false;
          for (const json& c : status.value("conditions", json::array())) {
            rolling = rolling || c.value("reason", "") == reason::kBatchHeld;
          }
          return ConditionStatus(status.value("conditions", json::array()), "MetricsAvailable") ==
                     "True" &&
                 outcome.plan.has_value() && !rolling &&
                 status["observed"]["pathRates"].value("p", 0.0) >= min_rps;
        },
        40s));
    return outcome;
  }

  // The last observation replayed, nothing changed since: the reconcile's outcome and how many
  // requests it sent the apiserver.
  std::pair<Reconciler::Outcome, long> LookAgain(const std::string& name) {
    frozen_ = last_;
    const long before = reconciler_client_->requests();
    auto outcome = reconciler_->Reconcile(ns_ + "/" + name);
    EXPECT_TRUE(outcome.ok()) << outcome.error().message;
    return {outcome.ok() ? *outcome : Reconciler::Outcome{},
            reconciler_client_->requests() - before};
  }

  json Status(const std::string& name) {
    auto object = client_->Get(kube::ObjectPath(kInferencePipelines, ns_, name));
    return object.ok() ? object->value("status", json::object()) : json::object();
  }

  api::ManagedFields Fields(const std::string& deployment) {
    auto d = client_->Get(kube::ObjectPath(kube::kDeployments, ns_, deployment));
    if (!d.ok()) return {};
    return api::ReadManagedFields(api::ReadDeployment(*d), "MAX_BATCH_SIZE");
  }

  // Waits until the watch cache has every Deployment the plan in status names, as written.
  void WaitForCache(const std::string& name) {
    ASSERT_TRUE(Eventually(
        [&] {
          for (const auto& t : Status(name)["plan"]["tasks"]) {
            auto cached = deployments_->Get(ns_ + "/" + t["deployment"].get<std::string>());
            if (!cached || api::ReadManagedFields(*cached, "MAX_BATCH_SIZE") !=
                               Fields(t["deployment"].get<std::string>())) {
              return false;
            }
          }
          return true;
        },
        10s));
  }

  // Waits until the watch cache's copy of pipeline `name` carries the status the server holds.
  void WaitForStatusCache(const std::string& name) {
    ASSERT_TRUE(Eventually(
        [&] { return pipelines_->Get(ns_ + "/" + name)->StoredStatus() == Status(name); }, 10s));
  }

  // Waits until the watch cache has the routing ConfigMap of `name` as the server has it.
  void WaitForRoutingCache(const std::string& name) {
    model::Pipeline pipeline;
    pipeline.name = name;
    pipeline.namespace_name = ns_;
    ASSERT_TRUE(Eventually(
        [&] {
          auto cached = owned_->RoutingConfigMap(pipeline);
          auto server = client_->Get(
              kube::ObjectPath(kube::kConfigMaps, ns_, api::RoutingConfigMapName(pipeline)));
          return cached && server.ok() && cached->data == api::ReadConfigMap(*server).data;
        },
        10s));
  }

  void TearDown() override {
    if (owned_) owned_->Stop();
    if (deployments_) deployments_->Stop();
    if (pipelines_) pipelines_->Stop();
  }

  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<kube::Client> reconciler_client_;
  std::string ns_;
  std::unique_ptr<PipelineInformer> pipelines_;
  std::unique_ptr<DeploymentInformer> deployments_;
  std::unique_ptr<OwnedObjects> owned_;
  std::mutex adoption_mu_;
  std::vector<std::string> adoption_changes_;  // the pipelines an adopted Deployment's change named
  std::unique_ptr<Reconciler> reconciler_;
  std::string prometheus_url_ = LocalEnv::Get().Var("PIPESCALE_PROMETHEUS");
  std::optional<model::MetricsSnapshot> last_;    // the last snapshot read
  std::optional<model::MetricsSnapshot> frozen_;  // replay one snapshot to test idempotence
};

TEST_F(ReconcilerTest, AppliesTheFa2PlanAndASecondPassWritesNothing) {
  testing::Load load(ns_, "shop", {{"p", 120}});
  Create(PipelineObject("shop", "Apply"));
  const Reconciler::Outcome first = ReconcileWithMetrics("shop", 100);
  ASSERT_TRUE(first.plan.has_value());

  const json status = Status("shop");
  EXPECT_EQ(ConditionStatus(status["conditions"], "Ready"), "True");
  EXPECT_EQ(ConditionStatus(status["conditions"], "PlanApplied"), "True");
  EXPECT_NEAR(status["observed"]["pathRates"]["p"].get<double>(), 120, 40);
  for (const auto& t : status["plan"]["tasks"]) {
    const api::ManagedFields f = Fields(t["deployment"]);
    EXPECT_EQ(f.replicas, t["replicas"].get<int>()) << t.dump();
    EXPECT_EQ(f.batch_size, t["batchSize"].get<int>()) << t.dump();
  }
  EXPECT_GT(status["totalReplicas"].get<int>(), 2);  // 120 rps needs more than one each
  auto deployment =
      client_->Get(kube::ObjectPath(kube::kDeployments, ns_, "shop-detect-small-cpu"));
  ASSERT_TRUE(deployment.ok());
  EXPECT_EQ((*deployment)["metadata"]["ownerReferences"][0]["kind"], "InferencePipeline");
  EXPECT_EQ(
      (*deployment)["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"],
      "500m");

  auto events = client_->Get(kube::CollectionPath(kube::kEvents, ns_));
  ASSERT_TRUE(events.ok());
  EXPECT_NE(events->dump().find("PlanChanged"), std::string::npos);

  // The status as the apiserver gives it back renders from its typed form: the cache keeps no
  // second, JSON copy of it.
  ASSERT_NO_FATAL_FAILURE(WaitForStatusCache("shop"));
  EXPECT_FALSE(pipelines_->Get(ns_ + "/shop")->unrendered_status.has_value());

  // The same observation again: nothing is written.
  WaitForCache("shop");
  ASSERT_NO_FATAL_FAILURE(WaitForStatusCache("shop"));
  const auto [second, sent] = LookAgain("shop");
  EXPECT_EQ(second.deployment_writes, 0);
  EXPECT_FALSE(second.status_written);
  EXPECT_EQ(second.events, 0);
  // Nor read: everything it observes comes from the watch caches.
  EXPECT_EQ(sent, 0);

  // A status whose measurement is a little off the decision's (as if written at the previous
  // look's rate) is not rewritten: the same plan from a rate within its jitter is no news.
  const double rate = Status("shop")["observed"]["pathRates"]["p"].get<double>();
  auto patched =
      client_->MergePatch(kube::ObjectPath(kInferencePipelines, ns_, "shop", "status"),
                          {{"status", {{"observed", {{"pathRates", {{"p", rate * 1.04}}}}}}}});
  ASSERT_TRUE(patched.ok()) << patched.error().message;
  ASSERT_NO_FATAL_FAILURE(WaitForStatusCache("shop"));
  const long jittered = reconciler_client_->requests();
  auto third = reconciler_->Reconcile(ns_ + "/shop");
  ASSERT_TRUE(third.ok()) << third.error().message;
  EXPECT_FALSE(third->status_written);
  EXPECT_EQ(reconciler_client_->requests() - jittered, 0);

  // One that moved by more is written to the status; the watch's echo of that write is known as
  // ours (the operator does not reconcile for it), once, and the copy kept against a lagging
  // cache is dropped with it.
  frozen_->path_rates_rps["p"] *= 1.25;
  auto fourth = reconciler_->Reconcile(ns_ + "/shop");
  ASSERT_TRUE(fourth.ok()) << fourth.error().message;
  ASSERT_TRUE(fourth->status_written);
  ASSERT_NO_FATAL_FAILURE(WaitForStatusCache("shop"));
  const api::PipelineObject echo = *pipelines_->Get(ns_ + "/shop");
  EXPECT_TRUE(reconciler_->EchoOfOwnWrite(ns_ + "/shop", echo));
  EXPECT_FALSE(reconciler_->EchoOfOwnWrite(ns_ + "/shop", echo));
}

// A Deployment made by someone else, named by a variant's deploymentName (none of our labels):
// the plan scales it in place, and once the watch of the namespace's Deployments (started by the
// first look at it) has it, a reconcile with nothing changed reads it from there, not by GET.
TEST_F(ReconcilerTest, AnAdoptedDeploymentIsScaledAndThenReadFromItsWatch) {
  const json legacy = testing::PlainDeployment(
      "legacy-detect", 1,
      {{"containers",
        json::array({{{"name", "legacy-model"},
                      {"image", "pipescale/model-server:dev"},
                      {"ports", json::array({{{"name", "http"}, {"containerPort", 8080}}})},
                      {"readinessProbe",
                       {{"httpGet", {{"path", "/v2/health/ready"}, {"port", "http"}}},
                        {"periodSeconds", 1}}}}})}});
  auto made = client_->Create(kube::CollectionPath(kube::kDeployments, ns_), legacy);
  ASSERT_TRUE(made.ok()) << made.error().message;
  json pipeline = PipelineObject("shop", "Apply");
  pipeline["spec"]["tasks"][0]["variants"][0]["deploymentName"] = "legacy-detect";
  testing::Load load(ns_, "shop", {{"p", 120}});
  Create(pipeline);
  ASSERT_TRUE(ReconcileWithMetrics("shop", 100).plan.has_value());

  int planned = 0;
  const json status = Status("shop");
  for (const auto& t : status["plan"]["tasks"]) {
    if (t["deployment"] == "legacy-detect") planned = t["replicas"].get<int>();
  }
  ASSERT_GT(planned, 1) << status.dump();  // 120 rps needs more than one
  EXPECT_EQ(Fields("legacy-detect").replicas, planned);
  auto adopted = client_->Get(kube::ObjectPath(kube::kDeployments, ns_, "legacy-detect"));
  ASSERT_TRUE(adopted.ok());
  EXPECT_FALSE((*adopted)["metadata"]["labels"].contains("pipescale.io/pipeline"));  // still theirs
  EXPECT_EQ((*adopted)["spec"]["template"]["spec"]["containers"][0]["name"], "legacy-model");

  // Both Deployments as written, in the caches the reconciler reads; then the same look again.
  ASSERT_TRUE(Eventually(
      [&] {
        const OwnedObjects::Adopted cached =
            owned_->AdoptedDeployment(ns_ + "/shop", ns_, "legacy-detect");
        const auto classify = deployments_->Get(ns_ + "/shop-classify-tiny-cpu");
        return cached.known && cached.deployment &&
               api::ReadManagedFields(*cached.deployment, "MAX_BATCH_SIZE") ==
                   Fields("legacy-detect") &&
               classify &&
               api::ReadManagedFields(*classify, "MAX_BATCH_SIZE") ==
                   Fields("shop-classify-tiny-cpu");
      },
      10s));
  ASSERT_NO_FATAL_FAILURE(WaitForStatusCache("shop"));
  const auto [again, sent] = LookAgain("shop");
  EXPECT_EQ(again.deployment_writes, 0);
  EXPECT_EQ(sent, 0);

  // Deleted, the pipeline adopts nothing: a change to the Deployment reconciles whoever still
  // adopts it ("other", in the same delivery) and not "shop".
  owned_->AdoptedDeployment(ns_ + "/other", ns_, "legacy-detect");
  ASSERT_TRUE(client_->Delete(kube::ObjectPath(kInferencePipelines, ns_, "shop")).ok());
  ASSERT_TRUE(Eventually([&] { return !pipelines_->Contains(ns_ + "/shop"); }));
  ASSERT_TRUE(reconciler_->Reconcile(ns_ + "/shop").ok());
  const auto named = [&](const std::string& name) {
    std::lock_guard lock(adoption_mu_);
    return std::count(adoption_changes_.begin(), adoption_changes_.end(), ns_ + "/" + name);
  };
  {
    std::lock_guard lock(adoption_mu_);
    adoption_changes_.clear();
  }
  ASSERT_TRUE(client_
                  ->MergePatch(kube::ObjectPath(kube::kDeployments, ns_, "legacy-detect"),
                               {{"metadata", {{"annotations", {{"touched", "1"}}}}}})
                  .ok());
  ASSERT_TRUE(Eventually([&] { return named("other") > 0; }, 10s));
  EXPECT_EQ(named("shop"), 0);
}

TEST_F(ReconcilerTest, LokiAppliesVariantsAndRoutingTablesIdempotently) {
  json object = PipelineObject("traffic", "Apply");
  object["spec"]["optimizer"] = "loki";
  // Loki's demand advances once per interval; a long one keeps this test's reconciles in one.
  object["spec"]["interval"] = "60s";
  object["spec"]["budget"] = {{"maxReplicas", 4}};
  json fast = object["spec"]["tasks"][1]["variants"][0];
  fast["name"] = "fast";
  fast["accuracy"] = 0.6;
  object["spec"]["tasks"][1]["variants"][0]["accuracy"] = 0.9;
  fast["profiles"][0]["latencyMs"]["quadratic"] = {{"a", 0}, {"b", 1}, {"c", 2}};
  object["spec"]["tasks"][1]["variants"].push_back(fast);
  testing::Load load(ns_, "traffic", {{"p", 60}});
  Create(object);
  const Reconciler::Outcome first = ReconcileWithMetrics("traffic", 40);
  ASSERT_TRUE(first.plan.has_value());
  EXPECT_TRUE(first.routing_written || Status("traffic")["plan"].contains("phase"));

  const json status = Status("traffic");
  EXPECT_EQ(status["plan"]["phase"], "HardwareScaling") << status.dump();
  for (const auto& t : status["plan"]["tasks"]) {
    const api::ManagedFields f = Fields(t["deployment"]);
    EXPECT_EQ(f.replicas, t["replicas"].get<int>()) << t.dump();
    EXPECT_EQ(f.batch_size, t["batchSize"].get<int>()) << t.dump();
  }
  auto routing = client_->Get(kube::ObjectPath(kube::kConfigMaps, ns_, "traffic-routing"));
  ASSERT_TRUE(routing.ok()) << routing.error().message;
  EXPECT_EQ((*routing)["metadata"]["ownerReferences"][0]["kind"], "InferencePipeline");
  const json tables = json::parse((*routing)["data"]["routing.json"].get<std::string>());
  EXPECT_EQ(tables["phase"], "HardwareScaling");
  EXPECT_FALSE(tables["tables"].empty());

  // The same observation again writes nothing: Deployments, status, tables.
  WaitForCache("traffic");
  ASSERT_NO_FATAL_FAILURE(WaitForStatusCache("traffic"));
  WaitForRoutingCache("traffic");
  const auto [second, sent] = LookAgain("traffic");
  EXPECT_EQ(second.deployment_writes, 0);
  EXPECT_FALSE(second.routing_written);
  EXPECT_FALSE(second.status_written) << Status("traffic").dump();
  EXPECT_EQ(sent, 0);  // the tables read from the cache

  // The tables go with the pipeline.
  ASSERT_TRUE(client_->Delete(kube::ObjectPath(kInferencePipelines, ns_, "traffic")).ok());
  EXPECT_TRUE(Eventually(
      [&] {
        auto left = client_->Get(kube::ObjectPath(kube::kConfigMaps, ns_, "traffic-routing"));
        return !left.ok() && left.error().kind == ErrorKind::kNotFound;
      },
      60s));
}

// detect -> classify on a gpu and a cpu class: what Kairos and MArk split a task over.
json PoolObject(const std::string& name, const std::string& optimizer) {
  json object = PipelineObject(name, "Apply");
  object["spec"]["optimizer"] = optimizer;
  object["spec"]["interval"] = "60s";  // one planning step for the whole test
  object["spec"]["hardwareClasses"] = {
      {{"name", "gpu"}, {"costPerHour", 1.0}, {"maxReplicas", 3}, {"startupSeconds", 30}},
      {{"name", "cpu"},
       {"costPerHour", 0.1},
       {"maxReplicas", 8},
       {"resources", {{"requests", {{"cpu", "500m"}}}}}}};
  for (json& task : object["spec"]["tasks"]) {
    json& profiles = task["variants"][0]["profiles"];
    json gpu = profiles[0];
    gpu["hardwareClass"] = "gpu";
    gpu["latencyMs"]["quadratic"] = {{"a", 0}, {"b", 1}, {"c", 4}};
    profiles.push_back(gpu);
  }
  return object;
}

// Kairos and MArk against the real apiserver: a Deployment per (task, class) at the planned
// replicas, the pools in the routing ConfigMap, and nothing written on a second pass.
TEST_F(ReconcilerTest, KairosAndMarkRunPoolsAcrossClassesIdempotently) {
  for (const std::string optimizer : {"kairos", "mark"}) {
    SCOPED_TRACE(optimizer);
    const std::string name = "pool-" + optimizer;
    testing::Load load(ns_, name, {{"p", 80}});
    Create(PoolObject(name, optimizer));
    ReconcileWithMetrics(name, 60);
    const json status = Status(name);
    EXPECT_EQ(ConditionStatus(status["conditions"], "PlanApplied"), "True") << status.dump();
    EXPECT_GT(status["costPerHour"].get<double>(), 0);
    if (optimizer == "kairos") {
      EXPECT_GE(0.85 * status["plan"]["upperBoundQps"].get<double>(),
                status["observed"]["pathRates"]["p"].get<double>() - 1e-6);
    } else {
      EXPECT_FALSE(status["plan"]["forecast"]["rps"].empty());
    }
    std::set<std::string> classes;
    for (const auto& t : status["plan"]["tasks"]) {
      EXPECT_EQ(Fields(t["deployment"]).replicas, t["replicas"].get<int>()) << t.dump();
      classes.insert(t["hardwareClass"].get<std::string>());
    }
    EXPECT_EQ(classes, (std::set<std::string>{"cpu", "gpu"}));
    auto routing = client_->Get(kube::ObjectPath(kube::kConfigMaps, ns_, name + "-routing"));
    ASSERT_TRUE(routing.ok()) << routing.error().message;
    const json pools = json::parse((*routing)["data"]["pools.json"].get<std::string>());
    EXPECT_EQ(pools["optimizer"], optimizer);
    ASSERT_EQ(pools["pools"].size(), 2u);
    for (const auto& pool : pools["pools"]) EXPECT_EQ(pool["members"].size(), 2u);

    WaitForCache(name);
    ASSERT_NO_FATAL_FAILURE(WaitForStatusCache(name));
    const Reconciler::Outcome second = LookAgain(name).first;
    EXPECT_EQ(second.deployment_writes, 0);
    EXPECT_FALSE(second.routing_written);
    EXPECT_FALSE(second.status_written) << Status(name).dump();
    frozen_.reset();
  }
}

TEST_F(ReconcilerTest, FollowsALoadStepUpAndDown) {
  testing::Load load(ns_, "steps", {{"p", 20}});
  Create(PipelineObject("steps", "Apply"));
  ReconcileWithMetrics("steps");
  const int low = Status("steps")["totalReplicas"];

  load.SetRate("p", 300);
  ASSERT_TRUE(Eventually(
      [&] {
        EXPECT_TRUE(reconciler_->Reconcile(ns_ + "/steps").ok());
        return Status("steps")["totalReplicas"].get<int>() > low + 2;
      },
      30s));
  const json high = Status("steps");
  for (const auto& t : high["plan"]["tasks"]) {
    EXPECT_EQ(Fields(t["deployment"]).replicas, t["replicas"].get<int>());
  }

  load.SetRate("p", 20);
  ASSERT_TRUE(Eventually(
      [&] {
        EXPECT_TRUE(reconciler_->Reconcile(ns_ + "/steps").ok());
        return Status("steps")["totalReplicas"].get<int>() <= low + 1;
      },
      30s));
}

TEST_F(ReconcilerTest, RecommendModeWritesNoDeployment) {
  testing::Load load(ns_, "dry", {{"p", 120}});
  Create(PipelineObject("dry", "Recommend"));
  const Reconciler::Outcome outcome = ReconcileWithMetrics("dry");
  EXPECT_EQ(outcome.deployment_writes, 0);
  const json status = Status("dry");
  EXPECT_EQ(status["plan"]["tasks"].size(), 2u);
  EXPECT_NE(status["conditions"].dump().find("RecommendMode"), std::string::npos);
  auto list = client_->Get(kube::CollectionPath(kube::kDeployments, ns_));
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE((*list)["items"].empty());
}

TEST_F(ReconcilerTest, InvalidSpecIsReportedAndOthersAreServed) {
  json invalid = PipelineObject("broken", "Apply");
  invalid["spec"]["tasks"][0]["next"][0]["task"] = "clasify";  // the schema cannot see this
  Create(invalid);
  auto r = reconciler_->Reconcile(ns_ + "/broken");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->requeue_after_seconds.has_value());
  const json status = Status("broken");
  ASSERT_EQ(ConditionStatus(status["conditions"], "Ready"), "False");
  EXPECT_NE(
      status["conditions"].dump().find(R"(spec.tasks[0].next[0].task: unknown task \"clasify\")"),
      std::string::npos)
      << status.dump();
  auto events = client_->Get(kube::CollectionPath(kube::kEvents, ns_));
  EXPECT_NE(events->dump().find("InvalidSpec"), std::string::npos);

  testing::Load load(ns_, "fine", {{"p", 50}});
  Create(PipelineObject("fine", "Apply"));
  ReconcileWithMetrics("fine");
  EXPECT_EQ(ConditionStatus(Status("fine")["conditions"], "Ready"), "True");
  auto list = client_->Get(kube::CollectionPath(kube::kDeployments, ns_));
  for (const auto& d : (*list)["items"]) {
    EXPECT_EQ(d["metadata"]["labels"]["pipescale.io/pipeline"], "fine");
  }
}

TEST_F(ReconcilerTest, PrometheusDownHoldsTheReplicas) {
  testing::Load load(ns_, "hold", {{"p", 200}});
  Create(PipelineObject("hold", "Apply"));
  ReconcileWithMetrics("hold");
  const json before = Status("hold");
  WaitForCache("hold");

  prometheus_url_ = "http://127.0.0.1:9";  // nothing listens there
  auto r = reconciler_->Reconcile(ns_ + "/hold");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->deployment_writes, 0);
  const json after = Status("hold");
  EXPECT_EQ(ConditionStatus(after["conditions"], "MetricsAvailable"), "False");
  for (const auto& t : before["plan"]["tasks"]) {
    EXPECT_EQ(Fields(t["deployment"]).replicas, t["replicas"].get<int>());
  }
}

TEST_F(ReconcilerTest, HandEditsAreRestored) {
  testing::Load load(ns_, "edit", {{"p", 120}});
  Create(PipelineObject("edit", "Apply"));
  ReconcileWithMetrics("edit");
  const json task = Status("edit")["plan"]["tasks"][0];
  const std::string name = task["deployment"];
  ASSERT_TRUE(client_
                  ->MergePatch(kube::ObjectPath(kube::kDeployments, ns_, name),
                               {{"spec", {{"replicas", task["replicas"].get<int>() + 7}}}})
                  .ok());
  ASSERT_TRUE(Eventually(
      [&] {
        auto cached = deployments_->Get(ns_ + "/" + name);
        return cached && cached->replicas == task["replicas"].get<int>() + 7;
      },
      10s));
  ASSERT_TRUE(Eventually(
      [&] {
        EXPECT_TRUE(reconciler_->Reconcile(ns_ + "/edit").ok());
        const json t = Status("edit")["plan"]["tasks"][0];
        return Fields(name).replicas == t["replicas"].get<int>();
      },
      20s));
}

TEST_F(ReconcilerTest, ACreateThatConflictsRereadsAndPatches) {
  testing::Load load(ns_, "race", {{"p", 120}});
  Create(PipelineObject("race", "Apply"));
  ReconcileWithMetrics("race");
  const json task = Status("race")["plan"]["tasks"][0];
  ASSERT_TRUE(client_
                  ->MergePatch(kube::ObjectPath(kube::kDeployments, ns_, task["deployment"]),
                               {{"spec", {{"replicas", 0}}}})
                  .ok());
  // A reconciler whose Deployment cache is empty (never started) believes nothing exists: its
  // creates meet 409 AlreadyExists from the real server and must re-read and patch instead.
  DeploymentInformer empty(*client_, DeploymentWatch(ns_), api::ReadDeployment,
                           [](const std::string&, const api::DeploymentView&) {});
  reconciler_ = MakeReconciler(empty);
  auto r = reconciler_->Reconcile(ns_ + "/race");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Fields(task["deployment"]).replicas, Status("race")["plan"]["tasks"][0]["replicas"]);
}

// The informer's copy of a pipeline lags the reconciler's own status write by a watch event,
// and a Deployment's event requeues the pipeline at once. A reconciler whose pipeline cache
// never moves (its informer stopped after the first list) still decides from what it wrote:
// the second pass writes nothing and announces nothing, where deciding from the cached copy
// would write the status again and emit PlanChanged twice. (Recommend mode: no rollout moves
// the Deployments between the passes.)
TEST_F(ReconcilerTest, ACacheBehindItsOwnWriteAnnouncesNothingTwice) {
  testing::Load load(ns_, "lag", {{"p", 60}});
  Create(PipelineObject("lag", "Recommend"));
  ReconcileWithMetrics("lag");
  ASSERT_TRUE(last_.has_value());
  PipelineInformer frozen(*client_, {.type = kInferencePipelines, .namespace_name = ns_},
                          api::ReadPipelineObject,
                          [](const std::string&, const api::PipelineObject&) {});
  frozen.Start();
  ASSERT_TRUE(frozen.WaitForSync(10s));
  frozen.Stop();
  const auto lagging = MakeReconciler(*deployments_, &frozen);
  model::MetricsSnapshot more = *last_;
  for (auto& [path, rps] : more.path_rates_rps) rps *= 5;
  if (more.arrival_rate_rps) *more.arrival_rate_rps *= 5;
  frozen_ = more;

  const auto first = lagging->Reconcile(ns_ + "/lag");
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_TRUE(first->status_written);
  EXPECT_EQ(first->events, 1);  // PlanChanged
  const json written = Status("lag");
  const auto second = lagging->Reconcile(ns_ + "/lag");
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_FALSE(second->status_written);
  EXPECT_EQ(second->events, 0);
  EXPECT_EQ(Status("lag"), written);
}

TEST_F(ReconcilerTest, DeletingThePipelineCollectsItsDeployments) {
  testing::Load load(ns_, "gone", {{"p", 60}});
  Create(PipelineObject("gone", "Apply"));
  ReconcileWithMetrics("gone");
  auto list = client_->Get(kube::CollectionPath(kube::kDeployments, ns_));
  ASSERT_FALSE((*list)["items"].empty());
  ASSERT_TRUE(client_->Delete(kube::ObjectPath(kInferencePipelines, ns_, "gone")).ok());
  EXPECT_TRUE(Eventually(
      [&] {
        auto l = client_->Get(kube::CollectionPath(kube::kDeployments, ns_));
        return l.ok() && (*l)["items"].empty();
      },
      40s));
}

}  // namespace
}  // namespace pipescale::reconciler
