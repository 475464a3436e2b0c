// Reconcile one InferencePipeline: observe (the CR and its Deployments from the watch caches, a
// metrics snapshot), decide (pure), act (write only what differs), report (one status write,
// events on plan changes). Level-triggered: it never asks why it was called.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/event.h"
#include "api/object_meta.h"
#include "api/pipeline_object.h"
#include "common/result.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "model/metrics_snapshot.h"
#include "model/pipeline.h"
#include "reconciler/arbiter.h"
#include "reconciler/capacity.h"
#include "reconciler/decide.h"
#include "reconciler/owned.h"

namespace pipescale::reconciler {

inline const kube::ResourceType kInferencePipelines{"pipescale.io/v1alpha1", "inferencepipelines",
                                                    true};
// Selects the Deployments the operator created for some pipeline.
inline constexpr const char* kDeploymentSelector = "pipescale.io/pipeline";

// The InferencePipelines a Reconciler reads, each decoded once per version
// (api::ReadPipelineObject): a reconcile parses nothing.
using PipelineInformer = kube::TypedInformer<api::PipelineObject>;

class Reconciler {
 public:
  using MetricsReader = std::function<Result<model::MetricsSnapshot>(const model::Pipeline&)>;
  // Per path, its rate over the last `intervals` intervals before `now`.
  using HistoryReader =
      std::function<Result<model::RateHistory>(const model::Pipeline&, int intervals, double now)>;
  using Clock = std::function<double()>;  // unix seconds

  // The caches must outlive the reconciler; `deployments` watches as DeploymentWatch says.
  // Without `history` a new leader starts its planners' rates from nothing.
  Reconciler(const kube::Client& client, const PipelineInformer& pipelines,
             const DeploymentInformer& deployments, const OwnedObjects& owned,
             MetricsReader metrics, Clock clock, HistoryReader history = nullptr);

  // Plan within what the cluster can place, as `cluster` (kept from the Node and Pod watches)
  // says; it must outlive the reconciler. Without it only the spec's limits apply.
  void WatchCapacity(const ClusterView& cluster) { cluster_ = &cluster; }
  // Plan within the share `arbiter` gives the pipeline of the pools it shares with others (with
  // WatchCapacity); it must outlive the reconciler.
  void ShareWith(Arbiter& arbiter) { arbiter_ = &arbiter; }

  // The ClusterRole the RoleBinding of each pipeline's router grants (the chart installs it).
  void SetRouterClusterRole(std::string name) { router_cluster_role_ = std::move(name); }
  // How MILPs are solved (Loki); by default CBC in this process.
  void SetMilpSolver(optimizer::MilpSolver solver) { milp_solver_ = std::move(solver); }

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
    // The measured profiles beside the declared ones (status.observed.profiles).
    std::vector<model::ObservedProfile> profiles;
    std::optional<ClusterCapacity> capacity;   // what the cluster could place, when known
    std::vector<model::Condition> conditions;  // status.conditions as decided
    std::vector<std::string> deployments;      // the plan's Deployments (status.plan.tasks)
    std::map<std::string, double> surges;      // the paths planned for their recent rates
    std::map<std::string, double> headroom;    // FA2: planned over measured rate, by path
  };

  // Thread-safe for distinct keys. kConflict, kTransient and friends for the caller's
  // backoff; an invalid spec is not an error but a reported outcome.
  Result<Outcome> Reconcile(const std::string& key);

  // For the pipelines' informer, after its cache took `object`: whether it is the watch's echo
  // of this replica's last status write, which has nothing new to reconcile (a reconcile for it
  // would double the reconciles of every pipeline whose measured rates move). The copy of the
  // write kept for Latest is dropped then: the cache holds it now.
  bool EchoOfOwnWrite(const std::string& key, const api::PipelineObject& object);

 private:
  using Object = std::shared_ptr<const api::PipelineObject>;

  // What one reconcile observed: the object as the informer decoded it (its metadata, spec and
  // status typed once per version), and what Decide reads, typed.
  struct Observation {
    Observed observed;
    Object object;
    std::string cached_version;  // the informer's resourceVersion, which a status write supersedes
  };

  // The phases of a reconcile.
  Result<Observation> Observe(const std::string& key, Object object, std::string cached_version);
  Decision TimedDecide(const std::string& key, Observation& seen, Outcome& outcome);
  Status Act(const Observation& seen, const Decision& decision, Outcome& outcome) const;
  Status Report(const std::string& key, Observation& seen, Decision decision, Outcome& outcome);

  // Observe's parts.
  Deployments ObserveDeployments(const Observation& seen) const;
  std::optional<api::ConfigMapView> ObserveRoutingConfigMap(const model::Pipeline& pipeline) const;
  std::optional<ClusterCapacity> ObserveCapacity(const model::Pipeline& pipeline) const;
  Memory Remembered(const std::string& key, const model::PipelineStatus& status,
                    const api::ParsedPipeline& parsed, double now);

  // Act's writes, one per kind of object.
  Status Write(const std::string& ns, const DeploymentWrite& write, Outcome& outcome) const;
  Status Write(const std::string& ns, const ConfigMapWrite& write) const;
  Status Write(const std::string& ns, const ObjectWrite& write) const;

  // Report's parts.
  Status WriteStatus(const std::string& key, const Observation& seen, const Decision& decision,
                     Outcome& outcome);
  void EmitEvents(const Observation& seen, const Decision& decision, Outcome& outcome) const;
  void Emit(const api::ObjectMeta& meta, const api::EventRecord& event, Outcome& outcome) const;

  const kube::Client& client_;
  const PipelineInformer& pipelines_;
  const DeploymentInformer& deployments_;
  const OwnedObjects& owned_;
  std::string router_cluster_role_ = "pipescale-router";
  optimizer::MilpSolver milp_solver_;
  MetricsReader metrics_;
  Clock clock_;
  HistoryReader history_;
  const ClusterView* cluster_ = nullptr;
  Arbiter* arbiter_ = nullptr;

  // The informer's copy of `key`, or the status this replica wrote since when the copy is
  // older: it lags a write by a watch event, and a decision from it would announce the same
  // change twice (a Deployment's watch event requeues the pipeline right after the write).
  Object Latest(const std::string& key, Object cached);
  void RememberWritten(const std::string& key, const api::PipelineObject& decided_from,
                       const std::string& cached_version, Object written);

  // Per pipeline key: the object as this replica last wrote it, decoded as the informer
  // decodes, and the resourceVersions it superseded, which the informer may still show.
  struct Written {
    Object object;
    std::set<std::string> superseded;
  };

  std::mutex mu_;
  // What one decision passes to the next, per pipeline key; recalled on first sight.
  std::map<std::string, Memory> memory_;
  std::map<std::string, Written> written_;
};

}  // namespace pipescale::reconciler
