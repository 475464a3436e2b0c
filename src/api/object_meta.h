// The metadata the operator reads of the objects it watches (its InferencePipelines, their
// Deployments): typed, so that the reconciler reads no object's JSON by key.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace pipescale::api {

struct ObjectMeta {
  std::string name;
  std::string namespace_name;
  std::string uid;
  std::string resource_version;
  long generation = 0;
  std::map<std::string, std::string> labels;
  bool operator==(const ObjectMeta&) const = default;
};

// metadata of `object`; a field absent or of the wrong type reads as empty (0), never throws:
// anything may be in an object read from the cluster.
ObjectMeta ReadObjectMeta(const nlohmann::json& object);

// The object's status as read, {} when it has none (the merge patch of a new status starts
// from it).
const nlohmann::json& StatusOf(const nlohmann::json& object);

}  // namespace pipescale::api
