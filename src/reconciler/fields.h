// Reading fields of objects read back from the cluster (our own status, Deployments): the
// common readers (common/json_fields.h) and what the reconciler reads of a status.plan.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/json_fields.h"

namespace pipescale::reconciler {

using pipescale::IntField;
using pipescale::StringField;

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
