// Reconcile one InferencePipeline: observe (the CR and its Deployments from the watch caches, a
// metrics snapshot), decide (pure), act (write only what differs), report (one status write,
// events on plan changes). Level-triggered: it never asks why it was called.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "model/metrics_snapshot.h"
#include "model/pipeline.h"
#include "reconciler/decide.h"

namespace pipescale::reconciler {

inline const kube::ResourceType kInferencePipelines{"pipescale.io/v1alpha1", "inferencepipelines",
                                                    true};
// Selects the Deployments the operator created for some pipeline.
inline constexpr const char* kDeploymentSelector = "pipescale.io/pipeline";

class Reconciler {
 public:
  using MetricsReader = std::function<Result<model::MetricsSnapshot>(const model::Pipeline&)>;
  // Per path, its rate over the last `intervals` intervals before `now`.
  using HistoryReader =
      std::function<Result<model::RateHistory>(const model::Pipeline&, int intervals, double now)>;
  using Clock = std::function<double()>;  // unix seconds

  // The informers must outlive the reconciler; `deployments` watches kDeploymentSelector.
  // Without `history` a new leader starts its planners' rates from nothing.
  Reconciler(const kube::Client& client, const kube::Informer& pipelines,
             const kube::Informer& deployments, MetricsReader metrics, Clock clock,
             HistoryReader history = nullptr);

  // Plan within what the cluster can place: `nodes` watches Nodes, `pods` every namespace's
  // Pods. Both must outlive the reconciler. Without them only the spec's limits apply.
  void WatchCapacity(const kube::Informer& nodes, const kube::Informer& pods) {
    nodes_ = &nodes;
    pods_ = &pods;
  }

  // The ClusterRole the RoleBinding of each pipeline's router grants (the chart installs it).
  void SetRouterClusterRole(std::string name) { router_cluster_role_ = std::move(name); }

  struct Outcome {
    std::optional<double> requeue_after_seconds;
    int deployment_writes = 0;
    int rollouts = 0;              // Deployment writes that restart pods (a pod template change)
    bool routing_written = false;  // the routing ConfigMap
    int router_writes = 0;         // the router's objects (spec.router)
    // Managed fields changed outside the operator and put back, e.g. "spec.replicas".
    std::vector<std::string> reverted_fields;
    bool status_written = false;
    int events = 0;
    std::optional<model::Plan> plan;
    double cost_per_hour = 0;
    double decide_seconds = 0;
    // Loki: the accuracy the router's answers carried (status.observed.dataPlane), when measured.
    std::optional<double> served_accuracy;
    std::optional<ClusterCapacity> capacity;  // what the cluster could place, when known
    nlohmann::json conditions = nlohmann::json::array();  // status.conditions as decided
    std::vector<std::string> deployments;  // the plan's Deployments (status.plan.tasks)
  };

  // Thread-safe for distinct keys. kConflict, kTransient and friends for the caller's
  // backoff; an invalid spec is not an error but a reported outcome.
  Result<Outcome> Reconcile(const std::string& key);

 private:
  std::map<std::string, nlohmann::json> ObserveDeployments(const nlohmann::json& object) const;
  Status Act(const std::string& ns, const DeploymentWrite& write, Outcome& outcome) const;
  Status Act(const std::string& ns, const ConfigMapWrite& write) const;
  Status Act(const std::string& ns, const ObjectWrite& write) const;
  Result<RouterObjects> ObserveRouter(const model::Pipeline& pipeline) const;
  Memory Remembered(const std::string& key, const nlohmann::json& object,
                    const api::ParsedPipeline& parsed, double now);
  void Emit(const nlohmann::json& object, const std::string& type, const std::string& reason,
            const std::string& message, double now, Outcome& outcome) const;

  const kube::Client& client_;
  const kube::Informer& pipelines_;
  const kube::Informer& deployments_;
  std::string router_cluster_role_ = "pipescale-router";
  MetricsReader metrics_;
  Clock clock_;
  HistoryReader history_;
  const kube::Informer* nodes_ = nullptr;
  const kube::Informer* pods_ = nullptr;

  // The informer's copy of `key`, or the status this replica wrote since when the copy is
  // older: it lags a write by a watch event, and a decision from it would announce the same
  // change twice (a Deployment's watch event requeues the pipeline right after the write).
  std::optional<nlohmann::json> Latest(const std::string& key,
                                       std::optional<nlohmann::json> cached);
  void RememberWritten(const std::string& key, const nlohmann::json& decided_from,
                       const std::string& cached_version, nlohmann::json written);

  // Per pipeline key: the object as this replica last wrote it, and the resourceVersions it
  // superseded, which the informer may still show.
  struct Written {  // NOLINT(bugprone-exception-escape): json's moves may throw
    nlohmann::json object;
    std::set<std::string> superseded;
  };

  std::mutex mu_;
  // What one decision passes to the next, per pipeline key; recalled on first sight.
  std::map<std::string, Memory> memory_;
  std::map<std::string, Written> written_;
};

}  // namespace pipescale::reconciler
