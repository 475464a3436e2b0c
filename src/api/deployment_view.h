// A Deployment as the operator reads it: typed, decoded once from the watch (or a read), and
// only the fields the reconciler decides from, so the reconciler reads no Deployment's JSON. The
// fields the operator manages on one (spec.replicas, the batch-size env of the first container
// and, for plans that set them, its server-queue env) are read and patched through it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/object_meta.h"
#include "model/plan.h"

namespace pipescale::api {

struct DeploymentView {
  ObjectMeta meta;
  std::optional<int> replicas;  // spec.replicas, when an integer an int holds
  // The pod template's first container: the one the operator sets the batch env of, and the
  // router's, whose image and arguments it keeps as decided. nullopt when there is none.
  struct Container {
    std::string name;
    std::optional<std::string> image;
    std::vector<std::string> args;  // the string arguments
    // The env entries with a string value, in order (valueFrom and the like are not numbers the
    // operator set).
    std::vector<std::pair<std::string, std::string>> env;
    bool operator==(const Container&) const = default;
  };
  std::optional<Container> container;
  // status: how far the Deployment controller has come.
  std::optional<int> status_replicas;  // pods of every template, while a rollout runs too
  int updated_replicas = 0;            // pods of the current template
  int ready_replicas = 0;              // pods passing their readiness probe
  long observed_generation = 0;
  // Why the controller cannot create the pods (condition ReplicaFailure, True): the API server
  // refused them, as it does a pod naming a PriorityClass the cluster lacks, or past a quota.
  // "" when it can.
  std::string replica_failure;
  bool operator==(const DeploymentView&) const = default;
};

// Never throws: a field absent or of the wrong shape reads as absent (anyone may edit the
// object).
DeploymentView ReadDeployment(const nlohmann::json& object);

// The env vars that hand a plan's model::ServerQueue to the model server, in whole
// milliseconds (pipescale-model-server reads them; a real server's entrypoint maps them onto its
// batcher, as Triton's max_queue_delay_microseconds and default_timeout_microseconds). Written
// only when the plan sets them; a server without them keeps its own.
inline constexpr const char* kMaxQueueDelayEnv = "PIPESCALE_MAX_QUEUE_DELAY_MS";
inline constexpr const char* kQueueTimeoutEnv = "PIPESCALE_QUEUE_TIMEOUT_MS";

// The env entries for `queue`: a name and whole milliseconds (at least 1) for each that is set.
std::vector<std::pair<std::string, std::string>> ServerQueueEnv(const model::ServerQueue& queue);

// The env entries for a server's batch: `batch_env` at the most it may batch (queue.max_batch,
// else `batch_size`), and model::kPlannedBatchEnv at `batch_size` where the two differ or where the
// Deployment has one already (`planned_set`: kept current, never left behind stale).
std::vector<std::pair<std::string, std::string>> BatchEnv(const std::string& batch_env,
                                                          int batch_size,
                                                          const model::ServerQueue& queue,
                                                          bool planned_set);

// What the operator manages on an existing Deployment.
struct ManagedFields {
  std::optional<int> replicas;
  // The plan's batch size: kPlannedBatchEnv where set, else the batch env's; nullopt when the
  // env var is absent or not a number.
  std::optional<int> batch_size;
  model::ServerQueue server_queue;  // 0 where its env var is absent or not a number
  bool planned_set = false;         // kPlannedBatchEnv is among the env vars
  bool operator==(const ManagedFields&) const = default;
};
ManagedFields ReadManagedFields(const DeploymentView& deployment, const std::string& batch_env);

// Replicas a Deployment runs or asks for, whichever is more: pods of a scale-in still run
// until they are gone, and the budget counts them.
int RunningReplicas(const DeploymentView& deployment);

// A strategic merge patch setting only what differs from `deployment`: spec.replicas, the batch
// env of the first container and the server-queue env `queue` sets (merged by name, so other env
// vars and containers stay). nullopt when nothing differs, or when an env var differs on a
// Deployment without a container to set it on.
std::optional<nlohmann::json> ManagedPatch(const DeploymentView& deployment,
                                           const std::string& batch_env, int replicas,
                                           int batch_size, const model::ServerQueue& queue = {});

}  // namespace pipescale::api
