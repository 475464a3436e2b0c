#include "api/pod_placement.h"

#include <algorithm>
#include <string>
#include <utility>

namespace pipescale::api {

using nlohmann::json;

json SpreadOverNodes(const json& match_labels) {
  return json::array({{{"maxSkew", 1},
                       {"topologyKey", "kubernetes.io/hostname"},
                       {"whenUnsatisfiable", "ScheduleAnyway"},
                       {"labelSelector", {{"matchLabels", match_labels}}}}});
}

namespace {

// Whether `t` tolerates the NoExecute taint `key` (any value), as the scheduler and the taint
// manager match: an empty key with Exists tolerates every taint, an empty effect every effect.
bool Tolerates(const json& t, const std::string& key) {
  if (!t.is_object()) return false;
  const auto field = [&](const char* name) {
    const auto it = t.find(name);
    return it != t.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string effect = field("effect");
  if (!effect.empty() && effect != "NoExecute") return false;
  if (field("key").empty()) return field("operator") == "Exists";
  return field("key") == key;
}

// Kubernetes' default --node-monitor-grace-period: how long a node has been silent when the node
// lifecycle controller marks it unreachable.
constexpr int kSilentBeforeUnreachableSeconds = 40;

}  // namespace

json ToleratingNodeLoss(const json& tolerations, int seconds) {
  json out = tolerations.is_array() ? tolerations : json::array();
  const std::pair<const char*, int> waits[] = {
      {"node.kubernetes.io/not-ready", seconds},
      {"node.kubernetes.io/unreachable", seconds - kSilentBeforeUnreachableSeconds}};
  for (const auto& [taint, wait] : waits) {
    const std::string key = taint;
    if (std::any_of(out.begin(), out.end(), [&](const json& t) { return Tolerates(t, key); })) {
      continue;
    }
    out.push_back({{"key", key},
                   {"operator", "Exists"},
                   {"effect", "NoExecute"},
                   {"tolerationSeconds", std::max(wait, 0)}});
  }
  return out;
}

}  // namespace pipescale::api
