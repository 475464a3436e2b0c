// Reading fields of objects read back from the cluster (our own status, Deployments): anyone
// with write access may have put anything there, so a field of the wrong type reads as absent
// instead of throwing.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace pipescale::reconciler {

inline int IntField(const nlohmann::json& object, const char* key, int absent) {
  if (!object.is_object()) return absent;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return absent;
  const auto v = it->get<std::int64_t>();
  return v < INT32_MIN || v > INT32_MAX ? absent : static_cast<int>(v);
}

inline std::string StringField(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// The tasks of a status.plan (as PlanStatus writes it) by their "deployment"; empty when there
// are none. The pointers are into `plan`.
inline std::map<std::string, const nlohmann::json*> TasksByDeployment(const nlohmann::json& plan) {
  std::map<std::string, const nlohmann::json*> out;
  if (!plan.is_object()) return out;
  const auto tasks = plan.find("tasks");
  if (tasks == plan.end() || !tasks->is_array()) return out;
  for (const nlohmann::json& t : *tasks) out[StringField(t, "deployment")] = &t;
  return out;
}

}  // namespace pipescale::reconciler
