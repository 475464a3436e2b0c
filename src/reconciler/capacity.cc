#include "reconciler/capacity.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "api/deployment.h"
#include "api/quantity.h"
#include "common/json_fields.h"

namespace pipescale::reconciler {
namespace {

using nlohmann::json;

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

bool Admits(const std::map<std::string, std::string>& selector, const json& tolerations,
            const NodeRoom& node) {
  for (const auto& [k, v] : selector) {
    if (Member(node.labels, k.c_str()) != json(v)) return false;
  }
  if (!node.taints.is_array()) return true;
  return std::all_of(node.taints.begin(), node.taints.end(),
                     [&](const json& taint) { return Tolerates(tolerations, taint); });
}

// Whether the scheduler may place a replica of `hw` on `node` at all.
bool Admits(const model::HardwareClass& hw, const NodeRoom& node) {
  return node.ready && Admits(hw.node_selector, hw.tolerations.get(), node);
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

// The resource a class's pool is counted in: an extended resource it needs (a device plugin's,
// named with a domain), else cpu; "" when it needs neither.
std::string PoolResource(const Resources& need) {
  for (const auto& [resource, amount] : need) {
    if (amount > 0 && resource.find('/') != std::string::npos) return resource;
  }
  const auto cpu = need.find("cpu");
  return cpu != need.end() && cpu->second > 0 ? "cpu" : "";
}

double Amount(const Resources& r, const std::string& resource) {
  const auto it = r.find(resource);
  return it == r.end() ? 0 : it->second;
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

NodeRoom ReadNode(const json& node) {
  NodeRoom room{.ready = Ready(node),
                .labels = Member(Member(node, "metadata"), "labels"),
                .taints = Member(Member(node, "spec"), "taints"),
                .allocatable = {}};
  AddQuantities(Member(Member(node, "status"), "allocatable"), room.allocatable, false);
  return room;
}

std::string RouterOf(const json& pod) {
  const json& meta = Member(pod, "metadata");
  const std::string router = StringField(Member(meta, "labels"), "pipescale.io/router");
  return router.empty() ? "" : StringField(meta, "namespace") + "/" + router;
}

PodShare ReadPod(const json& pod) {
  const json& meta = Member(pod, "metadata");
  const json& labels = Member(meta, "labels");
  const std::string pipeline = StringField(labels, "pipescale.io/pipeline");
  const std::string ns = StringField(meta, "namespace");
  const std::string phase = StringField(Member(pod, "status"), "phase");
  return {.terminal = phase == "Succeeded" || phase == "Failed",
          .node = StringField(Member(pod, "spec"), "nodeName"),
          .requests = PodRequests(pod),
          .pipeline = pipeline.empty() ? "" : ns + "/" + pipeline,
          .router_of = RouterOf(pod),
          .ip = StringField(Member(pod, "status"), "podIP"),
          .hardware_class = StringField(labels, "pipescale.io/hardware-class"),
          .task = StringField(labels, "pipescale.io/task"),
          .variant = StringField(labels, "pipescale.io/variant"),
          .unschedulable = UnschedulableMessage(pod),
          .priority = IntField(Member(pod, "spec"), "priority", 0)};
}

PriorityClassValue ReadPriorityClass(const json& priority_class) {
  return {.value = IntField(priority_class, "value", 0),
          .global_default = Member(priority_class, "globalDefault") == json(true)};
}

namespace {

// The Deployment a pod of the pipeline belongs to, from its pipescale.io labels; "" if none.
std::string DeploymentOf(const model::Pipeline& pipeline, const PodShare& pod) {
  const int t = pipeline.TaskIndex(pod.task);
  if (t < 0) return "";
  const model::Task& task = pipeline.spec.tasks[t];
  const model::Variant* variant = task.FindVariant(pod.variant);
  if (variant == nullptr) return "";
  return api::DeploymentName(pipeline, task, *variant, pod.hardware_class);
}

// A class's room, as any pipeline with the same selector, tolerations, requests and priority
// sees it.
struct ClassRoom {
  int nodes = 0;
  int placeable = 0;
  int preemptible = 0;  // of placeable
  std::string full_reason;
};

}  // namespace

// A pipeline's pods of one class on one node.
struct ModelPods {
  Resources requests;
  int pods = 0;
  int priority = 0;
};

struct ClusterView::State {
  mutable std::mutex mu;
  std::map<std::string, NodeRoom> nodes;  // by name
  // By node name, then priority: what its pods request.
  std::map<std::string, std::map<int, Resources>> used;
  // By node name: what its model pods request, by HolderKey, and what its other pods request.
  std::map<std::string, std::map<std::string, ModelPods>> models;
  std::map<std::string, Resources> others;
  std::unordered_map<std::string, PodShare> pods;            // by key, terminal pods left out
  std::map<std::string, std::set<std::string>> by_pipeline;  // pod keys
  std::map<std::string, PriorityClassValue> priority_classes;
  // Each class's room by what defines it, until the next change.
  mutable std::map<std::string, ClassRoom> rooms;

  void Unplace(const std::string& key);
  // What a node has left for a pod of `priority`: its allocatable less what the pods of that
  // priority or above request (all of them: `priority` nullopt).
  Resources Free(const std::string& node, const NodeRoom& room, std::optional<int> priority) const;
  ClassRoom Room(const model::HardwareClass& hw, int priority) const;
  // Who holds a full class's nodes at a priority above `priority`, other than `pipeline`.
  std::map<std::string, int> Holders(const model::HardwareClass& hw, int priority,
                                     const std::string& pipeline) const;
  // The priority admission gives the pipeline's pods.
  int PriorityOf(const model::Pipeline& pipeline) const;
  PoolView Pool(const model::HardwareClass& hw) const;
  // What a bound pod takes from its node (`sign` 1) or gives back (-1).
  void Account(const PodShare& pod, int sign);
};

void ClusterView::State::Account(const PodShare& pod, int sign) {
  if (pod.node.empty()) return;
  Resources& on = used[pod.node][pod.priority];
  for (const auto& [k, v] : pod.requests) on[k] += sign * v;
  if (pod.pipeline.empty()) {
    Resources& other = others[pod.node];
    for (const auto& [k, v] : pod.requests) other[k] += sign * v;
    return;
  }
  auto& on_node = models[pod.node];
  const std::string holder = HolderKey(pod.pipeline, pod.hardware_class);
  ModelPods& m = on_node[holder];
  for (const auto& [k, v] : pod.requests) m.requests[k] += sign * v;
  m.pods += sign;
  m.priority = pod.priority;
  if (m.pods <= 0) on_node.erase(holder);
}

PoolView ClusterView::State::Pool(const model::HardwareClass& hw) const {
  const Resources need = ReplicaRequests(hw);
  const std::string resource = PoolResource(need);
  PoolView pool;
  if (resource.empty()) return pool;
  pool.key = resource;
  pool.unit = Amount(need, resource);
  for (const auto& [name, node] : nodes) {
    if (!Admits(hw, node)) continue;
    pool.key += "|" + name;
    pool.capacity += Amount(node.allocatable, resource);
    if (const auto o = others.find(name); o != others.end()) {
      pool.capacity -= Amount(o->second, resource);
    }
    const auto m = models.find(name);
    if (m == models.end()) continue;
    for (const auto& [holder, held] : m->second) {
      const double units = Amount(held.requests, resource);
      if (units <= 0) continue;
      PoolView::Holding& h = pool.holders[holder];
      h.units += units;
      h.pods += held.pods;
      h.priority = held.priority;
    }
  }
  pool.capacity = std::max(0.0, pool.capacity);
  return pool;
}

void ClusterView::State::Unplace(const std::string& key) {
  auto it = pods.find(key);
  if (it == pods.end()) return;
  const PodShare& pod = it->second;
  Account(pod, -1);
  if (!pod.pipeline.empty()) {
    auto& keys = by_pipeline[pod.pipeline];
    keys.erase(key);
    if (keys.empty()) by_pipeline.erase(pod.pipeline);
  }
  pods.erase(it);
}

Resources ClusterView::State::Free(const std::string& node, const NodeRoom& room,
                                   std::optional<int> priority) const {
  Resources free = room.allocatable;
  const auto on = used.find(node);
  if (on == used.end()) return free;
  for (const auto& [p, requests] : on->second) {
    if (priority && p < *priority) continue;  // the scheduler preempts it for this pod
    for (const auto& [k, v] : requests) free[k] -= v;
  }
  return free;
}

int ClusterView::State::PriorityOf(const model::Pipeline& pipeline) const {
  const std::string& name = pipeline.spec.priority_class_name;
  if (!name.empty()) {
    const auto it = priority_classes.find(name);
    return it == priority_classes.end() ? 0 : it->second.value;
  }
  for (const auto& [n, c] : priority_classes) {
    if (c.global_default) return c.value;
  }
  return 0;
}

ClassRoom ClusterView::State::Room(const model::HardwareClass& hw, int priority) const {
  const Resources need = ReplicaRequests(hw);
  const std::string id = json{
      {"s", hw.node_selector},
      {"t", hw.tolerations.get()},
      {"n", need},
      {"p", priority}}.dump();
  if (auto it = rooms.find(id); it != rooms.end()) return it->second;
  ClassRoom room;
  std::map<std::string, int> scarce;
  for (const auto& [name, node] : nodes) {
    if (!Admits(hw, node)) continue;
    ++room.nodes;
    const auto [fit, resource] = Fit(Free(name, node, priority), need);
    room.placeable += fit;
    room.preemptible += fit - Fit(Free(name, node, std::nullopt), need).first;
    if (fit == 0) ++scarce[resource];
  }
  if (room.placeable == 0) {
    room.full_reason =
        room.nodes == 0 ? "no Ready node matches the class's nodeSelector and tolerations"
                        : "no room left for " +
                              std::max_element(scarce.begin(), scarce.end(), [](auto& a, auto& b) {
                                return a.second < b.second;
                              })->first;
  }
  rooms.emplace(id, room);
  return room;
}

std::map<std::string, int> ClusterView::State::Holders(const model::HardwareClass& hw, int priority,
                                                       const std::string& pipeline) const {
  std::set<std::string> admitted;
  for (const auto& [name, node] : nodes) {
    if (Admits(hw, node)) admitted.insert(name);
  }
  std::map<std::string, int> holders;
  for (const auto& [key, pod] : pods) {
    if (pod.priority <= priority || !admitted.contains(pod.node)) continue;
    const std::string& of = pod.pipeline.empty() ? pod.router_of : pod.pipeline;
    if (of != pipeline) ++holders[of.empty() ? "other pods" : of];
  }
  return holders;
}

std::string PipelineKey(const model::Pipeline& pipeline) {
  return pipeline.namespace_name + "/" + pipeline.name;
}

std::string HolderKey(const std::string& pipeline, const std::string& hardware_class) {
  return pipeline + "@" + hardware_class;
}

const ClassCapacity* ClusterCapacity::Find(const std::string& hardware_class) const {
  for (const ClassCapacity& c : classes) {
    if (c.hardware_class == hardware_class) return &c;
  }
  return nullptr;
}

ClusterView::ClusterView() : state_(std::make_unique<State>()) {}
ClusterView::~ClusterView() = default;

void ClusterView::SetNode(const std::string& key, NodeRoom node) {
  std::lock_guard lock(state_->mu);
  state_->nodes[key] = std::move(node);
  state_->rooms.clear();
}

void ClusterView::RemoveNode(const std::string& key) {
  std::lock_guard lock(state_->mu);
  state_->nodes.erase(key);
  state_->rooms.clear();
}

void ClusterView::SetPod(const std::string& key, const PodShare& pod) {
  std::lock_guard lock(state_->mu);
  State& s = *state_;
  s.Unplace(key);
  s.rooms.clear();
  if (pod.terminal) return;  // its room is free
  s.Account(pod, 1);
  if (!pod.pipeline.empty()) s.by_pipeline[pod.pipeline].insert(key);
  s.pods.emplace(key, pod);
}

void ClusterView::RemovePod(const std::string& key) {
  std::lock_guard lock(state_->mu);
  state_->Unplace(key);
  state_->rooms.clear();
}

void ClusterView::SetPriorityClass(const std::string& name, PriorityClassValue value) {
  std::lock_guard lock(state_->mu);
  state_->priority_classes[name] = value;
  state_->rooms.clear();
}

void ClusterView::RemovePriorityClass(const std::string& name) {
  std::lock_guard lock(state_->mu);
  state_->priority_classes.erase(name);
  state_->rooms.clear();
}

bool ClusterView::HasNodes() const {
  std::lock_guard lock(state_->mu);
  return !state_->nodes.empty();
}

ClusterCapacity ClusterView::Capacity(const model::Pipeline& pipeline) const {
  std::lock_guard lock(state_->mu);
  const State& s = *state_;
  std::map<std::string, Unschedulable> waiting;
  std::map<std::string, int> scheduled;  // by class
  static const std::set<std::string> kNone;
  const std::string me = PipelineKey(pipeline);
  const auto mine = s.by_pipeline.find(me);
  for (const std::string& key : mine == s.by_pipeline.end() ? kNone : mine->second) {
    const PodShare& pod = s.pods.at(key);
    // Terminating pods count as the pipeline's until they are gone: their room is not free
    // yet, and counting neither would read a rolling update as a shrinking cluster.
    if (!pod.node.empty()) ++scheduled[pod.hardware_class];
    if (!pod.unschedulable) continue;
    const std::string deployment = DeploymentOf(pipeline, pod);
    Unschedulable& u = waiting[deployment];
    u.deployment = deployment;
    ++u.pods;
    u.message = *pod.unschedulable;
  }
  ClusterCapacity out;
  const int priority = s.PriorityOf(pipeline);
  out.priority = priority;
  for (const model::HardwareClass& hw : pipeline.spec.hardware_classes) {
    ClassRoom room = s.Room(hw, priority);
    PoolView pool = hw.burst_min_warm ? PoolView{} : s.Pool(hw);  // burst classes are not sized
    const int pooled = pool.key.empty() ? 0 : static_cast<int>(pool.capacity / pool.unit + 1e-9);
    out.classes.push_back({.hardware_class = hw.name,
                           .nodes = room.nodes,
                           .placeable = room.placeable,
                           .scheduled = scheduled[hw.name],
                           .preemptible = room.preemptible,
                           .full_reason = std::move(room.full_reason),
                           .pool = pooled});
    out.pools.push_back(std::move(pool));
  }
  for (auto& [name, u] : waiting) out.unschedulable.push_back(std::move(u));
  for (const model::HardwareClass& hw : pipeline.spec.hardware_classes) {
    if (out.Find(hw.name)->placeable > 0) continue;
    auto holders = s.Holders(hw, priority, me);
    if (!holders.empty()) out.yielded.push_back({hw.name, std::move(holders)});
  }
  return out;
}

ClusterCapacity ComputeCapacity(const model::Pipeline& pipeline, const std::vector<json>& nodes,
                                const std::vector<json>& pods,
                                const std::vector<json>& priority_classes) {
  ClusterView view;
  for (const json& c : priority_classes) {
    view.SetPriorityClass(StringField(Member(c, "metadata"), "name"), ReadPriorityClass(c));
  }
  for (const json& node : nodes) {
    view.SetNode(StringField(Member(node, "metadata"), "name"), ReadNode(node));
  }
  for (size_t i = 0; i < pods.size(); ++i) view.SetPod(std::to_string(i), ReadPod(pods[i]));
  return view.Capacity(pipeline);
}

model::Pipeline WithinCapacity(const model::Pipeline& pipeline, const ClusterCapacity& capacity,
                               const std::map<std::string, api::DeploymentView>& deployments) {
  std::map<std::string, int> surge;  // by class
  for (const auto& [name, d] : deployments) {
    if (!d.replicas || !d.status_replicas) continue;
    const auto cls = d.meta.labels.find("pipescale.io/hardware-class");
    surge[cls == d.meta.labels.end() ? "" : cls->second] +=
        std::max(0, *d.status_replicas - *d.replicas);
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
