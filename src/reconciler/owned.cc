#include "reconciler/owned.h"

#include <algorithm>

#include "api/deployment.h"
#include "api/router_objects.h"
#include "reconciler/reconciler.h"

namespace pipescale::reconciler {
namespace {

using nlohmann::json;

// Labels the router's objects carry (api::RouterLabels): the pipeline's name.
constexpr const char* kRouterLabel = "pipescale.io/router";

// The router's objects a reconcile only needs to know exist.
enum RouterPart { kAccounts, kBindings, kServices, kBudgets };

}  // namespace

std::string PipelineOf(const api::ObjectMeta& meta) {
  const auto label = [&](const char* key) {
    const auto it = meta.labels.find(key);
    return it == meta.labels.end() ? std::string() : it->second;
  };
  std::string name = label(kDeploymentSelector);
  if (name.empty()) name = label(kRouterLabel);
  return name.empty() ? "" : meta.namespace_name + "/" + name;
}

std::string PipelineOf(const json& object) { return PipelineOf(api::ReadObjectMeta(object)); }

kube::InformerOptions DeploymentWatch(const std::string& namespace_name) {
  return {.type = kube::kDeployments,
          .namespace_name = namespace_name,
          .label_selector = kDeploymentSelector,
          .indexes = {{kPipelineIndex, [](const json& d) { return PipelineOf(d); }}}};
}

OwnedObjects::OwnedObjects(const kube::Client& client, const std::string& namespace_name,
                           const Changed& changed, std::optional<std::string> budget_api)
    : client_(client),
      namespace_(namespace_name),
      changed_(changed),
      budget_api_(std::move(budget_api)) {
  const auto watch = [&](const kube::ResourceType& type, const char* label) {
    return kube::InformerOptions{
        .type = type, .namespace_name = namespace_name, .label_selector = label};
  };
  // A change to any of them reconciles its pipeline.
  const auto handler = [changed](const std::string&, const api::ObjectMeta& meta) {
    if (std::string key = PipelineOf(meta); !key.empty()) changed(key);
  };
  config_maps_ = std::make_unique<kube::TypedInformer<api::ConfigMapView>>(
      client, watch(kube::kConfigMaps, kDeploymentSelector), api::ReadConfigMap,
      [handler](const std::string& key, const api::ConfigMapView& c) { handler(key, c.meta); });
  std::vector<kube::ResourceType> parts = {kRouterServiceAccounts, kRouterRoleBindings,
                                           kRouterServices};
  if (budget_api_) parts.push_back(DisruptionBudgets(*budget_api_));
  for (const kube::ResourceType& type : parts) {
    router_parts_.push_back(std::make_unique<kube::TypedInformer<api::ObjectMeta>>(
        client, watch(type, kRouterLabel), api::ReadObjectMeta, handler));
  }
  router_deployments_ = std::make_unique<DeploymentInformer>(
      client, watch(kube::kDeployments, kRouterLabel), api::ReadDeployment,
      [handler](const std::string& key, const api::DeploymentView& d) { handler(key, d.meta); });
}

OwnedObjects::~OwnedObjects() { Stop(); }

std::vector<kube::InformerBase*> OwnedObjects::Watches() const {
  std::vector<kube::InformerBase*> out = {config_maps_.get(), router_deployments_.get()};
  for (const auto& i : router_parts_) out.push_back(i.get());
  return out;
}

void OwnedObjects::Start() {
  for (kube::InformerBase* i : Watches()) i->Start();
  std::lock_guard lock(adopted_mu_);
  started_ = true;
}

void OwnedObjects::RequestStop() {
  for (kube::InformerBase* i : Watches()) i->RequestStop();
  std::lock_guard lock(adopted_mu_);
  stopping_ = true;
  if (adoptable_) adoptable_->RequestStop();
}

void OwnedObjects::Stop() {
  RequestStop();
  for (kube::InformerBase* i : Watches()) i->Stop();
  std::unique_ptr<DeploymentInformer> adoptable;
  {
    std::lock_guard lock(adopted_mu_);
    adoptable = std::move(adoptable_);
  }
  if (adoptable) adoptable->Stop();  // outside the lock its handler takes
}

void OwnedObjects::AdoptedChanged(const std::string& key) const {
  std::set<std::string> pipelines;
  {
    std::lock_guard lock(adopted_mu_);
    if (const auto it = adopters_.find(key); it != adopters_.end()) pipelines = it->second;
  }
  for (const std::string& p : pipelines) changed_(p);
}

OwnedObjects::Adopted OwnedObjects::AdoptedDeployment(const std::string& pipeline_key,
                                                      const std::string& namespace_name,
                                                      const std::string& name) const {
  const std::string key = namespace_name + "/" + name;
  const DeploymentInformer* informer = nullptr;
  {
    std::lock_guard lock(adopted_mu_);
    adopters_[key].insert(pipeline_key);
    if (!adoptable_ && started_ && !stopping_) {
      adoptable_ = std::make_unique<DeploymentInformer>(
          client_, kube::InformerOptions{.type = kube::kDeployments, .namespace_name = namespace_},
          api::ReadDeployment, [this](const std::string& changed, const api::DeploymentView&) {
            AdoptedChanged(changed);
          });
      adoptable_->Start();
    }
    informer = adoptable_.get();
  }
  // The informer lives until Stop, which no reconcile outlives.
  if (informer == nullptr || !informer->Synced()) return {};
  return {.known = true, .deployment = informer->Get(key)};
}

void OwnedObjects::ForgetAdopter(const std::string& pipeline_key) const {
  std::lock_guard lock(adopted_mu_);
  for (auto it = adopters_.begin(); it != adopters_.end();) {
    it->second.erase(pipeline_key);
    it = it->second.empty() ? adopters_.erase(it) : std::next(it);
  }
}

bool OwnedObjects::Synced() const {
  return std::ranges::all_of(Watches(), [](const kube::InformerBase* i) { return i->Synced(); });
}

std::shared_ptr<const api::ConfigMapView> OwnedObjects::RoutingConfigMap(
    const model::Pipeline& pipeline) const {
  return config_maps_->Get(pipeline.namespace_name + "/" + api::RoutingConfigMapName(pipeline));
}

RouterObjects OwnedObjects::Router(const model::Pipeline& pipeline) const {
  const std::string key = pipeline.namespace_name + "/" + api::RouterName(pipeline);
  RouterObjects out{.service_account = router_parts_[kAccounts]->Contains(key),
                    .role_binding = router_parts_[kBindings]->Contains(key),
                    .service = router_parts_[kServices]->Contains(key),
                    .disruption_budget = budget_api_ && router_parts_[kBudgets]->Contains(key),
                    .disruption_budget_api = budget_api_};
  if (auto d = router_deployments_->Get(key)) out.deployment = *d;
  return out;
}

}  // namespace pipescale::reconciler
