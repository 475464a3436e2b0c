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
                           const Changed& changed) {
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
}

void OwnedObjects::RequestStop() {
  for (auto& i : informers_) i->RequestStop();
}

void OwnedObjects::Stop() {
  RequestStop();
  for (auto& i : informers_) i->Stop();
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
