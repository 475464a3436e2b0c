// A ConfigMap as the operator reads it (the routing ConfigMap it writes for a pipeline's data
// plane): its metadata and data, typed.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "api/object_meta.h"

namespace pipescale::api {

struct ConfigMapView {
  ObjectMeta meta;
  std::map<std::string, std::string> data;  // the string values; anything else is left out
  bool operator==(const ConfigMapView&) const = default;
};

// Never throws: a field absent or of the wrong shape reads as absent.
ConfigMapView ReadConfigMap(const nlohmann::json& object);

}  // namespace pipescale::api
