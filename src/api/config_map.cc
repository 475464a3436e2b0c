#include "api/config_map.h"

#include "common/json_fields.h"

namespace pipescale::api {

ConfigMapView ReadConfigMap(const nlohmann::json& object) {
  ConfigMapView out{.meta = ReadObjectMeta(object), .data = {}};
  const nlohmann::json& data = Member(object, "data");
  if (!data.is_object()) return out;
  for (const auto& [key, value] : data.items()) {
    if (value.is_string()) out.data.emplace(key, value.get<std::string>());
  }
  return out;
}

}  // namespace pipescale::api
