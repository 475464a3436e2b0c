#include "router/endpoints.h"

#include <algorithm>
#include <cstdlib>

namespace pipescale::router {
namespace {

using nlohmann::json;

// A member as a string, or "" when absent or of another type: pods come from outside.
std::string Str(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

bool IsReady(const json& pod) {
  if (pod["metadata"].contains("deletionTimestamp")) return false;
  const json conditions = pod["status"].value("conditions", json::array());
  if (!conditions.is_array()) return false;
  for (const json& c : conditions) {
    if (c.is_object() && Str(c, "type") == "Ready") return Str(c, "status") == "True";
  }
  return false;
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
      if (Str(p, "name") == "http") return port;
      if (first == 0) first = port;
    }
  }
  return first > 0 ? first : kDefaultModelPort;
}

// The batch size the pod runs with: the variant's environment variable in any container.
int BatchOf(const json& containers, const std::string& env) {
  for (const json& c : containers) {
    if (!c.is_object()) continue;
    const json env_list = c.value("env", json::array());
    if (!env_list.is_array()) continue;
    for (const json& e : env_list) {
      if (e.is_object() && Str(e, "name") == env) {
        return std::max(1, std::atoi(Str(e, "value").c_str()));
      }
    }
  }
  return 1;
}

double WeightOf(const model::Pipeline& pipeline, const json& labels, const json& containers) {
  const int t = pipeline.TaskIndex(Str(labels, "pipescale.io/task"));
  if (t < 0) return 1;
  for (const model::Variant& v : pipeline.spec.tasks[t].variants) {
    if (v.name != Str(labels, "pipescale.io/variant")) continue;
    const model::Profile* p = v.FindProfile(Str(labels, "pipescale.io/hardware-class"));
    if (p == nullptr) return 1;
    const int batch = std::min(BatchOf(containers, v.batch_env), v.max_batch);
    const double ms = p->latency.Ms(batch);
    return ms > 0 ? batch * 1000 / ms : 1;
  }
  return 1;
}

// A JSON object's member as an object, or an empty one: pods come from outside.
json Object(const json& parent, const char* key) {
  const json* v = parent.is_object() && parent.contains(key) ? &parent[key] : nullptr;
  return v != nullptr && v->is_object() ? *v : json::object();
}

}  // namespace

std::map<std::string, std::vector<PodEndpoint>> ReadyEndpoints(const model::Pipeline& pipeline,
                                                               const std::vector<json>& pods) {
  std::map<std::string, std::vector<PodEndpoint>> out;
  for (const json& raw : pods) {
    const json pod = {{"metadata", Object(raw, "metadata")},
                      {"spec", Object(raw, "spec")},
                      {"status", Object(raw, "status")}};
    const json labels = Object(pod["metadata"], "labels");
    const std::string task = Str(labels, "pipescale.io/task");
    if (Str(labels, "pipescale.io/pipeline") != pipeline.name || task.empty()) continue;
    const std::string ip = Str(pod["status"], "podIP");
    if (ip.empty() || !IsReady(pod)) continue;
    const json containers = pod["spec"].value("containers", json::array());
    if (!containers.is_array()) continue;
    out[task].push_back(
        {Str(pod["metadata"], "name"), ip + ":" + std::to_string(PortOf(containers)),
         WeightOf(pipeline, labels, containers), Str(labels, "pipescale.io/variant")});
  }
  for (auto& [task, list] : out) {
    std::sort(list.begin(), list.end(),
              [](const PodEndpoint& a, const PodEndpoint& b) { return a.address < b.address; });
  }
  return out;
}

}  // namespace pipescale::router
