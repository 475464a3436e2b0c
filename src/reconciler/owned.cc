#include "reconciler/owned.h"

#include "api/deployment.h"
#include "api/router_objects.h"
#include "common/json_fields.h"
#include "reconciler/reconciler.h"

namespace pipescale::reconciler {
namespace {

using nlohmann::json;

// Labels the router's objects carry (api::RouterLabels): the pipeline's name.
constexpr const char* kRouterLabel = "pipescale.io/router";

enum Watched { kRoutingConfigMaps, kAccounts, kBindings, kRouterDeployments, kServices };

}  // namespace

std::string PipelineOf(const json& object) {
  const json& meta = Member(object, "metadata");
  const json& labels = Member(meta, "labels");
  std::string name = StringField(labels, kDeploymentSelector);
  if (name.empty()) name = StringField(labels, kRouterLabel);
  return name.empty() ? "" : StringField(meta, "namespace") + "/" + name;
}

kube::Informer::Options DeploymentWatch(const std::string& namespace_name) {
  return {.type = kube::kDeployments,
          .namespace_name = namespace_name,
          .label_selector = kDeploymentSelector,
          .indexes = {{kPipelineIndex, PipelineOf}}};
}

OwnedObjects::OwnedObjects(const kube::Client& client, const std::string& namespace_name,
                           const Changed& changed)
    : client_(client), namespace_(namespace_name), changed_(changed) {
  const std::pair<const kube::ResourceType*, const char*> watched[] = {
      {&kube::kConfigMaps, kDeploymentSelector},
      {&kRouterServiceAccounts, kRouterLabel},
      {&kRouterRoleBindings, kRouterLabel},
      {&kube::kDeployments, kRouterLabel},
      {&kRouterServices, kRouterLabel}};
  for (const auto& [type, label] : watched) {
    informers_.push_back(std::make_unique<kube::Informer>(
        client,
        kube::Informer::Options{
            .type = *type, .namespace_name = namespace_name, .label_selector = label},
        [changed](const std::string&, const json& object) {
          if (std::string key = PipelineOf(object); !key.empty()) changed(key);
        }));
  }
}

OwnedObjects::~OwnedObjects() { Stop(); }

void OwnedObjects::Start() {
  for (auto& i : informers_) i->Start();
  std::lock_guard lock(adopted_mu_);
  started_ = true;
}

void OwnedObjects::RequestStop() {
  for (auto& i : informers_) i->RequestStop();
  std::lock_guard lock(adopted_mu_);
  stopping_ = true;
  if (adoptable_) adoptable_->RequestStop();
}

void OwnedObjects::Stop() {
  RequestStop();
  for (auto& i : informers_) i->Stop();
  std::unique_ptr<kube::Informer> adoptable;
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
  const kube::Informer* informer = nullptr;
  {
    std::lock_guard lock(adopted_mu_);
    adopters_[key].insert(pipeline_key);
    if (!adoptable_ && started_ && !stopping_) {
      adoptable_ = std::make_unique<kube::Informer>(
          client_,
          kube::Informer::Options{.type = kube::kDeployments, .namespace_name = namespace_},
          [this](const std::string& changed, const json&) { AdoptedChanged(changed); });
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
  for (const auto& i : informers_) {
    if (!i->Synced()) return false;
  }
  return true;
}

std::optional<json> OwnedObjects::RoutingConfigMap(const model::Pipeline& pipeline) const {
  return informers_[kRoutingConfigMaps]->Get(pipeline.namespace_name + "/" +
                                             api::RoutingConfigMapName(pipeline));
}

RouterObjects OwnedObjects::Router(const model::Pipeline& pipeline) const {
  const std::string key = pipeline.namespace_name + "/" + api::RouterName(pipeline);
  return {.service_account = informers_[kAccounts]->Get(key),
          .role_binding = informers_[kBindings]->Get(key),
          .deployment = informers_[kRouterDeployments]->Get(key),
          .service = informers_[kServices]->Get(key)};
}

}  // namespace pipescale::reconciler
