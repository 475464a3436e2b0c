// What the operator creates for a pipeline beside its model Deployments (the routing ConfigMap;
// the router's ServiceAccount, RoleBinding, Deployment and Service), read from watches of the
// objects that carry its labels, so a reconcile reads them without asking the apiserver.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/config_map.h"
#include "api/deployment_view.h"
#include "api/object_meta.h"
#include "kube/informer.h"
#include "model/pipeline.h"
#include "reconciler/router.h"

namespace pipescale::reconciler {

// The informer index that files a model Deployment under its pipeline's "namespace/name".
inline constexpr const char* kPipelineIndex = "pipeline";

// The Deployments a Reconciler reads, each as its typed view.
using DeploymentInformer = kube::TypedInformer<api::DeploymentView>;

// How the Deployments informer a Reconciler reads must watch `namespace_name` ("" for all):
// the Deployments the operator created, indexed by their pipeline (decoded by
// api::ReadDeployment).
kube::InformerOptions DeploymentWatch(const std::string& namespace_name);

// The pipeline ("namespace/name") an object the operator created belongs to, from its labels;
// "" for an object of no pipeline.
std::string PipelineOf(const api::ObjectMeta& meta);
std::string PipelineOf(const nlohmann::json& object);

class OwnedObjects {
 public:
  // Called with the pipeline's key when one of its objects changes (an edit by hand, a delete),
  // so it is reconciled back.
  using Changed = std::function<void(const std::string& pipeline_key)>;

  // `budget_api`: the PodDisruptionBudget version the cluster serves (kube::FirstServedVersion
  // of kDisruptionBudgetVersions, asked once per operator); nullopt: none, and none is made.
  OwnedObjects(const kube::Client& client, const std::string& namespace_name,
               const Changed& changed, std::optional<std::string> budget_api);
  ~OwnedObjects();
  OwnedObjects(const OwnedObjects&) = delete;
  OwnedObjects& operator=(const OwnedObjects&) = delete;

  void Start();
  void RequestStop();  // as kube::Informer::RequestStop, for all of them
  void Stop();
  bool Synced() const;  // every watch has listed

  std::shared_ptr<const api::ConfigMapView> RoutingConfigMap(
      const model::Pipeline& pipeline) const;  // nullptr: there is none
  RouterObjects Router(const model::Pipeline& pipeline) const;

  // A Deployment a pipeline adopts by name (a variant's deploymentName: made by someone else, it
  // carries none of our labels). Read from a watch of every Deployment of the namespace, started
  // by the first such read, so an operator whose pipelines adopt nothing keeps none of them; a
  // change to it reconciles `pipeline_key`. `known` is false while that watch has not listed
  // yet: ask the apiserver.
  struct Adopted {
    bool known = false;
    std::shared_ptr<const api::DeploymentView> deployment;  // nullptr: there is none
  };
  Adopted AdoptedDeployment(const std::string& pipeline_key, const std::string& namespace_name,
                            const std::string& name) const;
  // A deleted pipeline adopts nothing any more: its adoptions are dropped, not kept for the
  // operator's life.
  void ForgetAdopter(const std::string& pipeline_key) const;

 private:
  const kube::Client& client_;
  const std::string namespace_;
  const Changed changed_;
  // The routing ConfigMaps; the router's ServiceAccounts, RoleBindings, Services and
  // PodDisruptionBudgets (whether they exist is all a reconcile asks), and its Deployments.
  std::unique_ptr<kube::TypedInformer<api::ConfigMapView>> config_maps_;
  std::vector<std::unique_ptr<kube::TypedInformer<api::ObjectMeta>>> router_parts_;
  std::optional<std::string> budget_api_;  // the PodDisruptionBudget version served, if any
  std::unique_ptr<DeploymentInformer> router_deployments_;

  std::vector<kube::InformerBase*> Watches() const;  // every informer but adoptable_

  // Reconciles the pipelines that adopted Deployment `key` ("namespace/name").
  void AdoptedChanged(const std::string& key) const;

  // Adopted Deployments (a cache behind a const read: mutable).
  mutable std::mutex adopted_mu_;
  mutable std::unique_ptr<DeploymentInformer> adoptable_;
  mutable std::map<std::string, std::set<std::string>> adopters_;  // Deployment key -> pipelines
  bool started_ = false, stopping_ = false;                        // under adopted_mu_
};

}  // namespace pipescale::reconciler
