// The typed views the operator reads (api/), made from objects as a stand-in for the apiserver
// keeps them: JSON, written and merge-patched as the apiserver would.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/config_map.h"
#include "api/deployment_view.h"

namespace pipescale::testing {

inline std::map<std::string, api::DeploymentView> DeploymentViews(
    const std::map<std::string, nlohmann::json>& objects) {
  std::map<std::string, api::DeploymentView> out;
  for (const auto& [name, object] : objects) out.emplace(name, api::ReadDeployment(object));
  return out;
}

inline std::optional<api::ConfigMapView> ConfigMapView(
    const std::optional<nlohmann::json>& object) {
  if (!object) return std::nullopt;
  return api::ReadConfigMap(*object);
}

}  // namespace pipescale::testing
