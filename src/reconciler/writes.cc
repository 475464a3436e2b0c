#include "reconciler/writes.h"

#include <algorithm>

#include "api/deployment.h"
#include "api/router_objects.h"
#include "common/strings.h"

namespace pipescale::reconciler {

using nlohmann::json;

std::vector<DeploymentWrite> PlanWrites(const model::Pipeline& pipeline, const std::string& uid,
                                        const Deployments& deployments,
                                        const std::vector<PlannedDeployment>& planned) {
  std::vector<DeploymentWrite> writes;
  for (const PlannedDeployment& p : planned) {
    auto it = deployments.find(p.name);
    if (it == deployments.end()) {
      const api::Owner owner{.name = pipeline.name, .uid = uid};
      writes.push_back(
          {.kind = DeploymentWrite::Kind::kCreate,
           .name = p.name,
           .body = api::BuildDeployment(pipeline, owner, *p.task, *p.variant, *p.hardware_class,
                                        p.target, p.batch_size, p.server_queue),
           .batch_env = p.variant->batch_env,
           .replicas = p.target,
           .batch_size = p.batch_size,
           .server_queue = p.server_queue});
    } else if (auto patch = api::ManagedPatch(it->second, p.variant->batch_env, p.target,
                                              p.batch_size, p.server_queue)) {
      writes.push_back({DeploymentWrite::Kind::kPatch, p.name, *patch});
    }
  }
  return writes;
}

namespace {

using Labels = std::map<std::string, std::string>;

std::string Label(const Labels& labels, const std::string& key) {
  const auto it = labels.find(key);
  return it == labels.end() ? "" : it->second;
}

// Whether the spec still lists the (task, variant, class) a Deployment's labels name.
bool Listed(const model::Pipeline& pipeline, const Labels& labels) {
  const int ti = pipeline.TaskIndex(Label(labels, "pipescale.io/task"));
  if (ti < 0) return false;
  const auto& variants = pipeline.spec.tasks[ti].variants;
  return std::any_of(variants.begin(), variants.end(), [&](const model::Variant& v) {
    return v.name == Label(labels, "pipescale.io/variant") &&
           v.FindProfile(Label(labels, "pipescale.io/hardware-class"));
  });
}

}  // namespace

std::vector<DeploymentWrite> LeftoverWrites(const model::Pipeline& pipeline,
                                            const Deployments& deployments,
                                            const std::set<std::string>& planned_names) {
  std::vector<DeploymentWrite> writes;
  for (const auto& [name, deployment] : deployments) {
    if (planned_names.contains(name)) continue;
    const Labels& labels = deployment.meta.labels;
    if (!Listed(pipeline, labels) && Label(labels, "pipescale.io/pipeline") == pipeline.name) {
      writes.push_back({DeploymentWrite::Kind::kDelete, name, {}});
    } else if (deployment.replicas.value_or(0) != 0) {
      writes.push_back({DeploymentWrite::Kind::kScaleToZero, name, {{"spec", {{"replicas", 0}}}}});
    }
  }
  return writes;
}

std::optional<ConfigMapWrite> RoutingWrite(const model::Pipeline& pipeline, const std::string& uid,
                                           const std::optional<api::ConfigMapView>& current,
                                           const model::Plan& plan) {
  const std::string name = api::RoutingConfigMapName(pipeline);
  if (!current) {
    const api::Owner owner{.name = pipeline.name, .uid = uid};
    return ConfigMapWrite{true, name, api::BuildRoutingConfigMap(pipeline, owner, plan)};
  }
  const json data = api::RoutingConfigMapData(pipeline, plan);
  std::map<std::string, std::string> have = current->data;
  have.erase(api::kPipelineKey);  // the router's part (reconciler/router.h)
  if (json(have) == data) return std::nullopt;
  // A merge patch: a key the plan no longer hands over (another optimizer's, batches the
  // servers form again) is removed, not left for the router to apply.
  json patch = data;
  for (const auto& [key, value] : have) {
    if (!data.contains(key)) patch[key] = nullptr;
  }
  return ConfigMapWrite{false, name, {{"data", patch}}};
}

std::string Revert::Message() const {
  return StrFormat("%s: %s was changed to %d outside the operator; set back to %d",
                   deployment.c_str(), field.c_str(), found, restored);
}

std::vector<Revert> FindReverts(const model::AppliedPlan* applied, const Deployments& deployments,
                                const std::vector<PlannedDeployment>& planned) {
  std::vector<Revert> out;
  if (applied == nullptr) return out;  // no record yet: nothing to compare with
  for (const PlannedDeployment& p : planned) {
    auto dep = deployments.find(p.name);
    const model::TaskPlan* set = applied->Find(p.name);  // what the operator set
    if (dep == deployments.end() || set == nullptr) continue;
    const api::ManagedFields now = api::ReadManagedFields(dep->second, p.variant->batch_env);
    if (now.replicas && *now.replicas != set->replicas && *now.replicas != p.target) {
      out.push_back({p.name, "spec.replicas", *now.replicas, p.target});
    }
    if (now.batch_size && *now.batch_size != set->batch_size && *now.batch_size != p.batch_size) {
      out.push_back({p.name, "spec.template.spec.containers[0].env[" + p.variant->batch_env + "]",
                     *now.batch_size, p.batch_size});
    }
  }
  return out;
}

}  // namespace pipescale::reconciler
