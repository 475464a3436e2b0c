#include "api/deployment_view.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>

#include "common/json_fields.h"

namespace pipescale::api {
namespace {

using nlohmann::json;

// An integer field within an int; nullopt when absent or anything else.
std::optional<int> OptionalInt(const json& object, const char* key) {
  const json& v = Member(object, key);
  if (!v.is_number_integer()) return std::nullopt;
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() > INT32_MAX) return std::nullopt;
    return static_cast<int>(v.get<std::uint64_t>());
  }
  const auto n = v.get<std::int64_t>();
  if (n < INT32_MIN || n > INT32_MAX) return std::nullopt;
  return static_cast<int>(n);
}

std::optional<DeploymentView::Container> FirstContainer(const json& object) {
  const json& containers =
      Member(Member(Member(Member(object, "spec"), "template"), "spec"), "containers");
  if (!containers.is_array() || containers.empty()) return std::nullopt;
  const json& c = containers[0];
  DeploymentView::Container out{.name = StringField(c, "name")};
  if (const json& image = Member(c, "image"); image.is_string()) out.image = image;
  if (const json& args = Member(c, "args"); args.is_array()) {
    for (const json& a : args) {
      if (a.is_string()) out.args.push_back(a);
    }
  }
  if (const json& env = Member(c, "env"); env.is_array()) {
    for (const json& e : env) {
      const json& value = Member(e, "value");
      if (e.is_object() && value.is_string()) out.env.emplace_back(StringField(e, "name"), value);
    }
  }
  return out;
}

// The message of condition ReplicaFailure while it is True ("" without one).
std::string ReplicaFailure(const json& status) {
  const json& conditions = Member(status, "conditions");
  if (!conditions.is_array()) return "";
  for (const json& c : conditions) {
    if (StringField(c, "type") != "ReplicaFailure" || StringField(c, "status") != "True") continue;
    const std::string message = StringField(c, "message");
    return message.empty() ? StringField(c, "reason") + " (no message)" : message;
  }
  return "";
}

}  // namespace

DeploymentView ReadDeployment(const json& object) {
  const json& status = Member(object, "status");
  return {.meta = ReadObjectMeta(object),
          .replicas = OptionalInt(Member(object, "spec"), "replicas"),
          .container = FirstContainer(object),
          .status_replicas = OptionalInt(status, "replicas"),
          .updated_replicas = IntField(status, "updatedReplicas", 0),
          .ready_replicas = IntField(status, "readyReplicas", 0),
          .observed_generation = IntField(status, "observedGeneration", 0),
          .replica_failure = ReplicaFailure(status)};
}

namespace {

// Every env entry of every Deployment goes through here at each reconcile, most of them not
// numbers: a failure costs nothing (no message is built, as ParseInteger's would be).
std::optional<int> WholeNumber(const std::string& value) {
  int n = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || ptr != value.data() + value.size()) return std::nullopt;
  return n;
}

std::string WholeMs(double ms) { return std::to_string(std::max(1L, std::lround(ms))); }

}  // namespace

std::vector<std::pair<std::string, std::string>> ServerQueueEnv(const model::ServerQueue& queue) {
  std::vector<std::pair<std::string, std::string>> env;
  if (queue.max_delay_ms > 0) env.emplace_back(kMaxQueueDelayEnv, WholeMs(queue.max_delay_ms));
  if (queue.timeout_ms > 0) env.emplace_back(kQueueTimeoutEnv, WholeMs(queue.timeout_ms));
  return env;
}

std::vector<std::pair<std::string, std::string>> BatchEnv(const std::string& batch_env,
                                                          int batch_size,
                                                          const model::ServerQueue& queue,
                                                          bool planned_set) {
  const int most = queue.max_batch > 0 ? queue.max_batch : batch_size;
  std::vector<std::pair<std::string, std::string>> env{{batch_env, std::to_string(most)}};
  if (most != batch_size || planned_set)
    env.emplace_back(model::kPlannedBatchEnv, std::to_string(batch_size));
  return env;
}

ManagedFields ReadManagedFields(const DeploymentView& deployment, const std::string& batch_env) {
  ManagedFields fields{.replicas = deployment.replicas};
  if (!deployment.container) return fields;
  std::optional<int> most;
  std::optional<int> planned;
  for (const auto& [name, value] : deployment.container->env) {
    const std::optional<int> n = WholeNumber(value);
    if (name == batch_env) most = n;
    if (name == model::kPlannedBatchEnv) {
      planned = n;
      fields.planned_set = true;
    }
    if (name == kMaxQueueDelayEnv) fields.server_queue.max_delay_ms = n.value_or(0);
    if (name == kQueueTimeoutEnv) fields.server_queue.timeout_ms = n.value_or(0);
  }
  fields.batch_size = planned ? planned : most;
  if (planned && most && *most != *planned) fields.server_queue.max_batch = *most;
  return fields;
}

int RunningReplicas(const DeploymentView& deployment) {
  return std::max(deployment.replicas.value_or(0), deployment.status_replicas.value_or(0));
}

std::optional<json> ManagedPatch(const DeploymentView& deployment, const std::string& batch_env,
                                 int replicas, int batch_size, const model::ServerQueue& queue) {
  const ManagedFields now = ReadManagedFields(deployment, batch_env);
  json patch = json::object();
  if (now.replicas != replicas) patch["spec"]["replicas"] = replicas;
  json env = json::array();
  auto want = ServerQueueEnv(queue);
  auto have = ServerQueueEnv(now.server_queue);
  if (!batch_env.empty()) {
    const auto batch = BatchEnv(batch_env, batch_size, queue, now.planned_set);
    want.insert(want.begin(), batch.begin(), batch.end());
    if (now.batch_size) {
      const auto had = BatchEnv(batch_env, *now.batch_size, now.server_queue, now.planned_set);
      have.insert(have.end(), had.begin(), had.end());
    }
  }
  for (const auto& entry : want) {
    if (std::find(have.begin(), have.end(), entry) == have.end()) {
      env.push_back({{"name", entry.first}, {"value", entry.second}});
    }
  }
  if (!env.empty()) {
    if (!deployment.container) return std::nullopt;  // not a Deployment we can manage
    patch["spec"]["template"]["spec"]["containers"] =
        json::array({{{"name", deployment.container->name}, {"env", env}}});
  }
  if (patch.empty()) return std::nullopt;
  return patch;
}

}  // namespace pipescale::api
