#include "kube/merge_patch.h"

namespace pipescale::kube {

using nlohmann::json;

json MergePatchFrom(const json& before, const json& after) {
  if (!before.is_object() || !after.is_object()) return after;
  json patch = json::object();
  for (const auto& member : before.items()) {
    if (!after.contains(member.key())) patch[member.key()] = nullptr;
  }
  for (const auto& [key, new_value] : after.items()) {
    const auto old_value = before.find(key);
    if (old_value == before.end()) {
      patch[key] = new_value;
    } else if (*old_value != new_value) {
      patch[key] = old_value->is_object() && new_value.is_object()
                       ? MergePatchFrom(*old_value, new_value)
                       : new_value;
    }
  }
  return patch;
}

}  // namespace pipescale::kube
