#include "reconciler/capacity.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "api/deployment.h"
#include "api/quantity.h"
#include "common/json_fields.h"

namespace pipescale::reconciler {
namespace {

using nlohmann::json;
using Resources = std::map<std::string, double>;

void AddQuantities(const json& map, Resources& into, bool only_missing) {
  if (!map.is_object()) return;
  for (const auto& [name, value] : map.items()) {
    if (!value.is_string() && !value.is_number()) continue;
    if (only_missing && into.contains(name)) continue;
    auto q = api::ParseQuantity(value.is_string() ? value.get<std::string>() : value.dump());
    if (q) into[name] += *q;
  }
}

// What a pod asks the scheduler for: its containers' requests, limits standing in where a
// resource has no request (as the API defaults them), and one pod slot.
Resources PodRequests(const json& pod) {
  Resources total{{"pods", 1}};
  const json& containers = Member(Member(pod, "spec"), "containers");
  if (!containers.is_array()) return total;
  for (const json& c : containers) {
    Resources one;
    const json& resources = Member(c, "resources");
    AddQuantities(Member(resources, "requests"), one, false);
    AddQuantities(Member(resources, "limits"), one, true);
    for (const auto& [k, v] : one) total[k] += v;
  }
  return total;
}

Resources ReplicaRequests(const model::HardwareClass& hw) {
  Resources need{{"pods", 1}};
  for (const auto& [k, v] : hw.requests) need[k] = api::ParseQuantity(v).value_or(0);
  for (const auto& [k, v] : hw.limits) {
    if (!need.contains(k)) need[k] = api::ParseQuantity(v).value_or(0);
  }
  return need;
}

bool Ready(const json& node) {
  if (Member(Member(node, "spec"), "unschedulable") == json(true)) return false;
  const json& conditions = Member(Member(node, "status"), "conditions");
  if (!conditions.is_array()) return false;
  return std::any_of(conditions.begin(), conditions.end(), [](const json& c) {
    return StringField(c, "type") == "Ready" && StringField(c, "status") == "True";
  });
}

bool Tolerates(const json& tolerations, const json& taint) {
  const std::string effect = StringField(taint, "effect");
  if (effect != "NoSchedule" && effect != "NoExecute") return true;  // PreferNoSchedule
  if (!tolerations.is_array()) return false;
  return std::any_of(tolerations.begin(), tolerations.end(), [&](const json& t) {
    if (!StringField(t, "effect").empty() && StringField(t, "effect") != effect) return false;
    const std::string key = StringField(t, "key");
    if (StringField(t, "operator") == "Exists")
      return key.empty() || key == StringField(taint, "key");
    return key == StringField(taint, "key") &&
           StringField(t, "value") == StringField(taint, "value");
  });
}

bool Admits(const model::HardwareClass& hw, const json& tolerations, const json& node) {
  const json& labels = Member(Member(node, "metadata"), "labels");
  for (const auto& [k, v] : hw.node_selector) {
    if (Member(labels, k.c_str()) != json(v)) return false;
  }
  const json& taints = Member(Member(node, "spec"), "taints");
  if (!taints.is_array()) return true;
  return std::all_of(taints.begin(), taints.end(),
                     [&](const json& taint) { return Tolerates(tolerations, taint); });
}

bool Terminal(const json& pod) {
  const std::string phase = StringField(Member(pod, "status"), "phase");
  return phase == "Succeeded" || phase == "Failed";
}

// Replicas that fit in `free`, and the resource that allows the fewest.
std::pair<int, std::string> Fit(const Resources& free, const Resources& need) {
  int fit = std::numeric_limits<int>::max();
  std::string scarce;
  for (const auto& [resource, amount] : need) {
    if (amount <= 0) continue;
    auto it = free.find(resource);
    const double have = it == free.end() ? 0 : it->second;
    const int n = static_cast<int>(std::floor(std::max(0.0, have) / amount + 1e-9));
    if (n < fit) {
      fit = n;
      scarce = resource;
    }
  }
  return {fit == std::numeric_limits<int>::max() ? 0 : fit, scarce};
}

// The Deployment a pod of the pipeline belongs to, from its pipescale.io labels; "" if none.
std::string DeploymentOf(const model::Pipeline& pipeline, const json& labels) {
  const int t = pipeline.TaskIndex(StringField(labels, "pipescale.io/task"));
  if (t < 0) return "";
  const model::Task& task = pipeline.spec.tasks[t];
  const model::Variant* variant = task.FindVariant(StringField(labels, "pipescale.io/variant"));
  if (variant == nullptr) return "";
  return api::DeploymentName(pipeline, task, *variant,
                             StringField(labels, "pipescale.io/hardware-class"));
}

bool OfPipeline(const model::Pipeline& pipeline, const json& pod) {
  const json& meta = Member(pod, "metadata");
  return StringField(meta, "namespace") == pipeline.namespace_name &&
         StringField(Member(meta, "labels"), "pipescale.io/pipeline") == pipeline.name;
}

// The scheduler's message when it has marked the pod Unschedulable.
std::optional<std::string> UnschedulableMessage(const json& pod) {
  if (!StringField(Member(pod, "spec"), "nodeName").empty()) return std::nullopt;
  const json& conditions = Member(Member(pod, "status"), "conditions");
  if (!conditions.is_array()) return std::nullopt;
  for (const json& c : conditions) {
    if (StringField(c, "type") == "PodScheduled" && StringField(c, "status") == "False" &&
        StringField(c, "reason") == "Unschedulable") {
      return StringField(c, "message");
    }
  }
  return std::nullopt;
}

}  // namespace

const ClassCapacity* ClusterCapacity::Find(const std::string& hardware_class) const {
  for (const ClassCapacity& c : classes) {
    if (c.hardware_class == hardware_class) return &c;
  }
  return nullptr;
}

ClusterCapacity ComputeCapacity(const model::Pipeline& pipeline, const std::vector<json>& nodes,
                                const std::vector<json>& pods) {
  std::map<std::string, Resources> used;  // by node name
  ClusterCapacity out;
  std::map<std::string, Unschedulable> waiting;
  std::map<std::string, int> scheduled;  // by class
  for (const json& pod : pods) {
    if (Terminal(pod)) continue;
    const std::string node = StringField(Member(pod, "spec"), "nodeName");
    if (!node.empty()) {
      for (const auto& [k, v] : PodRequests(pod)) used[node][k] += v;
    }
    if (!OfPipeline(pipeline, pod)) continue;
    const json& labels = Member(Member(pod, "metadata"), "labels");
    // Terminating pods count as the pipeline's until they are gone: their room is not free
    // yet, and counting neither would read a rolling update as a shrinking cluster.
    if (!node.empty()) ++scheduled[StringField(labels, "pipescale.io/hardware-class")];
    if (auto message = UnschedulableMessage(pod)) {
      const std::string deployment = DeploymentOf(pipeline, labels);
      Unschedulable& u = waiting[deployment];
      u.deployment = deployment;
      ++u.pods;
      u.message = *message;
    }
  }
  for (const model::HardwareClass& hw : pipeline.spec.hardware_classes) {
    const json tolerations = json::parse(hw.tolerations_json, nullptr, false);
    const Resources need = ReplicaRequests(hw);
    ClassCapacity c{.hardware_class = hw.name, .scheduled = scheduled[hw.name]};
    std::map<std::string, int> scarce;
    for (const json& node : nodes) {
      if (!Ready(node) || !Admits(hw, tolerations, node)) continue;
      ++c.nodes;
      Resources free;
      AddQuantities(Member(Member(node, "status"), "allocatable"), free, false);
      for (const auto& [k, v] : used[StringField(Member(node, "metadata"), "name")]) free[k] -= v;
      const auto [fit, resource] = Fit(free, need);
      c.placeable += fit;
      if (fit == 0) ++scarce[resource];
    }
    if (c.placeable == 0) {
      c.full_reason =
          c.nodes == 0 ? "no Ready node matches the class's nodeSelector and tolerations"
                       : "no room left for " +
                             std::max_element(scarce.begin(), scarce.end(), [](auto& a, auto& b) {
                               return a.second < b.second;
                             })->first;
    }
    out.classes.push_back(std::move(c));
  }
  for (auto& [name, u] : waiting) out.unschedulable.push_back(std::move(u));
  return out;
}

model::Pipeline WithinCapacity(const model::Pipeline& pipeline, const ClusterCapacity& capacity,
                               const std::map<std::string, json>& deployments) {
  std::map<std::string, int> surge;  // by class
  for (const auto& [name, d] : deployments) {
    const json& status = Member(d, "status");
    const json& replicas = Member(Member(d, "spec"), "replicas");
    const json& running = Member(status, "replicas");
    if (!replicas.is_number_integer() || !running.is_number_integer()) continue;
    const std::string cls =
        StringField(Member(Member(d, "metadata"), "labels"), "pipescale.io/hardware-class");
    surge[cls] += std::max(0, running.get<int>() - replicas.get<int>());
  }
  model::Pipeline out = pipeline;
  for (model::HardwareClass& hw : out.spec.hardware_classes) {
    const ClassCapacity* c = capacity.Find(hw.name);
    if (c == nullptr || hw.burst_min_warm) continue;  // burst classes are kept warm, not sized
    const int limit = std::max(0, c->Limit() - surge[hw.name]);
    hw.max_replicas = std::min(hw.max_replicas.value_or(limit), limit);
  }
  return out;
}

}  // namespace pipescale::reconciler
