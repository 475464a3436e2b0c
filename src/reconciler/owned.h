// What the operator creates for a pipeline beside its model Deployments (the routing ConfigMap;
// the router's ServiceAccount, RoleBinding, Deployment and Service), read from watches of the
// objects that carry its labels, so a reconcile reads them without asking the apiserver.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kube/informer.h"
#include "model/pipeline.h"
#include "reconciler/router.h"

namespace pipescale::reconciler {

// The informer index that files a model Deployment under its pipeline's "namespace/name".
inline constexpr const char* kPipelineIndex = "pipeline";

// How the Deployments informer a Reconciler reads must watch `namespace_name` ("" for all):
// the Deployments the operator created, indexed by their pipeline.
kube::Informer::Options DeploymentWatch(const std::string& namespace_name);

// The pipeline ("namespace/name") an object the operator created belongs to, from its labels;
// "" for an object of no pipeline.
std::string PipelineOf(const nlohmann::json& object);

class OwnedObjects {
 public:
  // Called with the pipeline's key when one of its objects changes (an edit by hand, a delete),
  // so it is reconciled back.
  using Changed = std::function<void(const std::string& pipeline_key)>;

  OwnedObjects(const kube::Client& client, const std::string& namespace_name,
               const Changed& changed);
  ~OwnedObjects();
  OwnedObjects(const OwnedObjects&) = delete;
  OwnedObjects& operator=(const OwnedObjects&) = delete;

  void Start();
  void RequestStop();  // as kube::Informer::RequestStop, for all five
  void Stop();
  bool Synced() const;  // every watch has listed

  std::optional<nlohmann::json> RoutingConfigMap(const model::Pipeline& pipeline) const;
  RouterObjects Router(const model::Pipeline& pipeline) const;

 private:
  // The routing ConfigMaps, then the router's ServiceAccounts, RoleBindings, Deployments and
  // Services.
  std::vector<std::unique_ptr<kube::Informer>> informers_;
};

}  // namespace pipescale::reconciler
