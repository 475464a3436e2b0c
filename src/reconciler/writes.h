// The writes that bring the cluster to a decision: per planned Deployment only the fields that
// differ, the pipeline's other Deployments idle at 0 or deleted, the routing ConfigMap when its
// data changed; and the changes made outside the operator that those writes put back.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/config_map.h"
#include "api/deployment_view.h"
#include "model/pipeline.h"
#include "model/plan.h"
#include "model/status.h"
#include "reconciler/planned.h"

namespace pipescale::reconciler {

struct DeploymentWrite {
  enum class Kind { kCreate, kPatch, kScaleToZero, kDelete };
  Kind kind = Kind::kPatch;
  std::string name;
  nlohmann::json body;  // the object (create) or a strategic merge patch (patch, scale to 0)
  // What the operator manages on the Deployment, for a create that finds it already exists.
  std::string batch_env;
  int replicas = 0;
  int batch_size = 1;
  model::ServerQueue server_queue;
};

// Routing for the data plane (Loki's tables, Kairos's and MArk's pools), in the ConfigMap
// `<pipeline>-routing`.
struct ConfigMapWrite {
  bool create = false;
  std::string name;
  nlohmann::json body;  // the object (create) or a merge patch of its data
};

// A create for a Deployment that does not exist, else a patch of what differs, if anything.
std::vector<DeploymentWrite> PlanWrites(const model::Pipeline& pipeline, const std::string& uid,
                                        const Deployments& deployments,
                                        const std::vector<PlannedDeployment>& planned);

// The pipeline's Deployments outside the plan: a (task, variant, class) the spec still lists
// idles at 0, the rest are deleted (adopted Deployments carry no pipeline label and stay).
std::vector<DeploymentWrite> LeftoverWrites(const model::Pipeline& pipeline,
                                            const Deployments& deployments,
                                            const std::set<std::string>& planned_names);

// The routing ConfigMap's create or data patch (a merge patch: keys the plan no longer hands
// over are set to null); nullopt when `current` already holds the data.
std::optional<ConfigMapWrite> RoutingWrite(const model::Pipeline& pipeline, const std::string& uid,
                                           const std::optional<api::ConfigMapView>& current,
                                           const model::Plan& plan);

// A managed field someone else changed since the operator last set it, and what it goes back to.
struct Revert {
  std::string deployment;
  std::string field;  // spec.replicas, or the batch-size env var's path
  int found = 0;
  int restored = 0;

  std::string Message() const;
  bool operator==(const Revert&) const = default;
};

// The reverts among the planned Deployments' writes. `applied` is the status's plan as the
// operator last wrote it (null before the first): a field that differs from it was changed
// outside the operator.
std::vector<Revert> FindReverts(const model::AppliedPlan* applied, const Deployments& deployments,
                                const std::vector<PlannedDeployment>& planned);

}  // namespace pipescale::reconciler
