#include "routing/endpoints.h"

#include <algorithm>
#include <optional>

#include "common/flags.h"
#include "common/json_fields.h"
#include "model/limits.h"
#include "model/plan.h"

namespace pipescale::routing {
namespace {

using nlohmann::json;

// A JSON object's member as an object, or an empty one: pods come from outside.
json Object(const json& parent, const char* key) {
  const json* v = parent.is_object() && parent.contains(key) ? &parent[key] : nullptr;
  return v != nullptr && v->is_object() ? *v : json::object();
}

// The task a pod of `pipeline` serves, by its labels; "" for another pipeline's pod or none.
std::string TaskOf(const model::Pipeline& pipeline, const json& labels) {
  if (StringField(labels, "pipescale.io/pipeline") != pipeline.name) return "";
  return StringField(labels, "pipescale.io/task");
}

// Whether a container waits in the kubelet's crash-loop backoff: it crashed again after its
// first restart (which is immediate), and is started next only after 10 s to 5 min, to crash
// again as likely as not.
bool CrashLooping(const json& statuses) {
  return std::any_of(statuses.begin(), statuses.end(), [](const json& c) {
    const json& waiting = Object(Object(c, "state"), "waiting");
    const auto reason = waiting.find("reason");
    return reason != waiting.end() && *reason == "CrashLoopBackOff";
  });
}

int PortOf(const json& containers) {
  int first = 0;
  for (const json& c : containers) {
    if (!c.is_object()) continue;
    const json ports = c.value("ports", json::array());
    if (!ports.is_array()) continue;
    for (const json& p : ports) {
      if (!p.is_object() || !p.value("containerPort", json()).is_number_integer()) continue;
      const int port = p["containerPort"].get<int>();
      if (StringField(p, "name") == "http") return port;
      if (first == 0) first = port;
    }
  }
  return first > 0 ? first : kDefaultModelPort;
}

}  // namespace

int PlannedBatch(const json& containers, const std::string& env) {
  if (!containers.is_array()) return 1;
  std::optional<int> most;
  for (const json& c : containers) {
    if (!c.is_object()) continue;
    const json env_list = c.value("env", json::array());
    if (!env_list.is_array()) continue;
    for (const json& e : env_list) {
      if (!e.is_object()) continue;
      const std::string name = StringField(e, "name");
      if (name != model::kPlannedBatchEnv && (name != env || most)) continue;
      // A value that is not a batch size (a user's template, a hand edit) says nothing.
      const auto value = ParseInteger(name, StringField(e, "value"), 1, limits::kMaxBatch);
      if (!value) continue;
      if (name == model::kPlannedBatchEnv) return *value;
      most = *value;
    }
  }
  return most.value_or(1);
}

void Profile(const model::Pipeline& pipeline, const std::string& task, PodEndpoint& pod) {
  const int t = pipeline.TaskIndex(task);
  const model::Variant* v = t < 0 ? nullptr : pipeline.spec.tasks[t].FindVariant(pod.variant);
  const model::Profile* p = v == nullptr ? nullptr : v->FindProfile(pod.hardware_class);
  if (p == nullptr) return;
  pod.batch = std::clamp(pod.batch, 1, v->max_batch);
  pod.batch_ms = p->latency.Ms(pod.batch);
  if (pod.batch_ms > 0) pod.weight = pod.batch * 1000 / pod.batch_ms;
}

bool PodReady(const json& pod) {
  if (Object(pod, "metadata").contains("deletionTimestamp")) return false;
  const json conditions = Object(pod, "status").value("conditions", json::array());
  if (!conditions.is_array()) return false;
  for (const json& c : conditions) {
    if (c.is_object() && StringField(c, "type") == "Ready") {
      return StringField(c, "status") == "True";
    }
  }
  return false;
}

namespace {

// The endpoints of the pods of `pipeline` that `keep` accepts, by task, each sorted by address.
std::map<std::string, std::vector<PodEndpoint>> EndpointsWhere(const model::Pipeline& pipeline,
                                                               const std::vector<json>& pods,
                                                               bool (*keep)(const json&)) {
  std::map<std::string, std::vector<PodEndpoint>> out;
  for (const json& raw : pods) {
    const json pod = {{"metadata", Object(raw, "metadata")},
                      {"spec", Object(raw, "spec")},
                      {"status", Object(raw, "status")}};
    const json labels = Object(pod["metadata"], "labels");
    const std::string task = TaskOf(pipeline, labels);
    if (task.empty()) continue;
    const std::string ip = StringField(pod["status"], "podIP");
    if (ip.empty() || !keep(pod)) continue;
    const json containers = pod["spec"].value("containers", json::array());
    if (!containers.is_array()) continue;
    PodEndpoint endpoint{.name = StringField(pod["metadata"], "name"),
                         .address = ip + ":" + std::to_string(PortOf(containers)),
                         .variant = StringField(labels, "pipescale.io/variant"),
                         .hardware_class = StringField(labels, "pipescale.io/hardware-class")};
    endpoint.node = StringField(pod["spec"], "nodeName");
    const int t = pipeline.TaskIndex(task);
    const model::Variant* v =
        t < 0 ? nullptr : pipeline.spec.tasks[t].FindVariant(endpoint.variant);
    if (v != nullptr) endpoint.batch = PlannedBatch(containers, v->batch_env);
    Profile(pipeline, task, endpoint);
    out[task].push_back(std::move(endpoint));
  }
  for (auto& [task, list] : out) {
    std::sort(list.begin(), list.end(),
              [](const PodEndpoint& a, const PodEndpoint& b) { return a.address < b.address; });
  }
  return out;
}

}  // namespace

std::map<std::string, std::vector<PodEndpoint>> ReadyEndpoints(const model::Pipeline& pipeline,
                                                               const std::vector<json>& pods) {
  return EndpointsWhere(pipeline, pods, PodReady);
}

bool PodStarting(const json& pod) {
  if (Object(pod, "metadata").contains("deletionTimestamp") || PodReady(pod)) return false;
  const json& status = Object(pod, "status");
  if (StringField(status, "phase") != "Running") return false;
  const json statuses = status.value("containerStatuses", json::array());
  if (!statuses.is_array() || statuses.empty()) return false;
  return std::all_of(statuses.begin(), statuses.end(),
                     [](const json& c) { return !Object(Object(c, "state"), "running").empty(); });
}

std::map<std::string, std::vector<PodEndpoint>> StartingEndpoints(const model::Pipeline& pipeline,
                                                                  const std::vector<json>& pods) {
  return EndpointsWhere(pipeline, pods, PodStarting);
}

std::map<std::string, int> RestartingPods(const model::Pipeline& pipeline,
                                          const std::vector<json>& pods) {
  std::map<std::string, int> out;
  for (const json& pod : pods) {
    const json& metadata = Object(pod, "metadata");
    const std::string task = TaskOf(pipeline, Object(metadata, "labels"));
    if (task.empty()) continue;
    if (metadata.contains("deletionTimestamp") || PodReady(pod)) continue;
    const json statuses = Object(pod, "status").value("containerStatuses", json::array());
    if (!statuses.is_array()) continue;
    const bool restarted = std::any_of(statuses.begin(), statuses.end(), [](const json& c) {
      const json n = c.is_object() ? c.value("restartCount", json()) : json();
      return (n.is_number_integer() && n.get<long long>() > 0) ||
             !Object(Object(c, "state"), "terminated").empty() ||
             !Object(Object(c, "lastState"), "terminated").empty();
    });
    if (restarted && !CrashLooping(statuses)) ++out[task];
  }
  return out;
}

}  // namespace pipescale::routing
