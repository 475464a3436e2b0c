#include "api/object_meta.h"

#include <cstdint>

#include "common/json_fields.h"

namespace pipescale::api {

ObjectMeta ReadObjectMeta(const nlohmann::json& object) {
  const nlohmann::json& meta = Member(object, "metadata");
  ObjectMeta out{.name = StringField(meta, "name"),
                 .namespace_name = StringField(meta, "namespace"),
                 .uid = StringField(meta, "uid"),
                 .resource_version = StringField(meta, "resourceVersion")};
  const nlohmann::json& generation = Member(meta, "generation");
  if (generation.is_number_integer() && !generation.is_number_unsigned()) {
    out.generation = generation.get<long>();
  } else if (generation.is_number_unsigned() && generation.get<std::uint64_t>() <= INT64_MAX) {
    out.generation = static_cast<long>(generation.get<std::uint64_t>());
  }
  const nlohmann::json& labels = Member(meta, "labels");
  if (!labels.is_object()) return out;
  for (const auto& [key, value] : labels.items()) {
    if (value.is_string()) out.labels[key] = value.get<std::string>();
  }
  return out;
}

const nlohmann::json& StatusOf(const nlohmann::json& object) {
  const nlohmann::json& status = Member(object, "status");
  static const nlohmann::json kNone = nlohmann::json::object();
  return status.is_object() ? status : kNone;
}

}  // namespace pipescale::api
