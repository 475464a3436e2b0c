#include "reconciler/conditions.h"

#include "common/time.h"

namespace pipescale::reconciler {

namespace {

// An empty message is left out: kube-apiserver 1.20 turns "" inside a merge patch of a custom
// resource's status into null and then rejects it against the schema (seen with our local
// apiserver).
void SetMessage(nlohmann::json& condition, const std::string& message) {
  if (message.empty()) {
    condition.erase("message");
  } else {
    condition["message"] = message;
  }
}

}  // namespace

void SetCondition(nlohmann::json& conditions, const std::string& type, bool status,
                  const std::string& reason, const std::string& message, long generation,
                  double now) {
  if (!conditions.is_array()) conditions = nlohmann::json::array();
  const std::string value = status ? "True" : "False";
  for (auto& c : conditions) {
    if (c.value("type", "") != type) continue;
    if (c.value("status", "") != value) c["lastTransitionTime"] = FormatRfc3339(now);
    c["status"] = value;
    c["reason"] = reason;
    SetMessage(c, message);
    c["observedGeneration"] = generation;
    return;
  }
  nlohmann::json c = {{"type", type},
                      {"status", value},
                      {"reason", reason},
                      {"observedGeneration", generation},
                      {"lastTransitionTime", FormatRfc3339(now)}};
  SetMessage(c, message);
  conditions.push_back(std::move(c));
}

std::string ConditionStatus(const nlohmann::json& conditions, const std::string& type) {
  if (!conditions.is_array()) return "";
  for (const auto& c : conditions) {
    if (c.value("type", "") == type) return c.value("status", "");
  }
  return "";
}

}  // namespace pipescale::reconciler
