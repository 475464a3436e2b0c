#include "reconciler/conditions.h"

#include "api/status_json.h"
#include "common/time.h"

namespace pipescale::reconciler {

void SetCondition(std::vector<model::Condition>& conditions, const std::string& type, bool status,
                  const std::string& reason, const std::string& message, long generation,
                  double now) {
  SetConditionValue(conditions, type, status ? "True" : "False", reason, message, generation, now);
}

void SetConditionValue(std::vector<model::Condition>& conditions, const std::string& type,
                       const std::string& value, const std::string& reason,
                       const std::string& message, long generation, double now) {
  for (model::Condition& c : conditions) {
    if (c.type != type) continue;
    if (c.status != value) c.last_transition_time = FormatRfc3339(now);
    c.status = value;
    c.reason = reason;
    c.message = message;
    c.observed_generation = generation;
    return;
  }
  conditions.push_back({.type = type,
                        .status = value,
                        .reason = reason,
                        .message = message,
                        .observed_generation = generation,
                        .last_transition_time = FormatRfc3339(now)});
}

void RemoveCondition(std::vector<model::Condition>& conditions, const std::string& type) {
  std::erase_if(conditions, [&](const model::Condition& c) { return c.type == type; });
}

std::string ConditionStatus(const std::vector<model::Condition>& conditions,
                            const std::string& type) {
  for (const model::Condition& c : conditions) {
    if (c.type == type) return c.status;
  }
  return "";
}

std::string ConditionStatus(const nlohmann::json& conditions, const std::string& type) {
  return ConditionStatus(api::ReadConditions(conditions), type);
}

}  // namespace pipescale::reconciler
