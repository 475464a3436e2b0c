#include "reconciler/conditions.h"

#include <ctime>

namespace pipescale::reconciler {

std::string Rfc3339(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void SetCondition(nlohmann::json& conditions, const std::string& type, bool status,
                  const std::string& reason, const std::string& message, long generation,
                  double now) {
  if (!conditions.is_array()) conditions = nlohmann::json::array();
  const std::string value = status ? "True" : "False";
  for (auto& c : conditions) {
    if (c.value("type", "") != type) continue;
    if (c.value("status", "") != value) c["lastTransitionTime"] = Rfc3339(now);
    c["status"] = value;
    c["reason"] = reason;
    c["message"] = message;
    c["observedGeneration"] = generation;
    return;
  }
  conditions.push_back({{"type", type},
                        {"status", value},
                        {"reason", reason},
                        {"message", message},
                        {"observedGeneration", generation},
                        {"lastTransitionTime", Rfc3339(now)}});
}

std::string ConditionStatus(const nlohmann::json& conditions, const std::string& type) {
  if (!conditions.is_array()) return "";
  for (const auto& c : conditions) {
    if (c.value("type", "") == type) return c.value("status", "");
  }
  return "";
}

}  // namespace pipescale::reconciler
