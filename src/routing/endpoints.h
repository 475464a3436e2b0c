// Which model pods a router may call: the Ready pods of its pipeline, found from the Pod
// objects the cluster reports, each weighted by the capacity its plan gives it. Pure.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/pipeline.h"

namespace pipescale::routing {

inline constexpr int kDefaultModelPort = 8080;  // the Open Inference Protocol's usual HTTP port

struct PodEndpoint {
  std::string name;            // the pod's, for logs
  std::string address;         // ip:port
  double weight = 1;           // requests per second one replica serves as planned
  std::string variant;         // its pipescale.io/variant label, for the per-variant metrics
  std::string hardware_class;  // its pipescale.io/hardware-class label, for the pools
  int batch = 1;               // the batch size it runs as planned (PlannedBatch)
  double batch_ms = 0;         // d(batch) of its variant on its class; 0 where not known
  std::string node;            // the node it runs on (spec.nodeName); "" where not known
  bool operator==(const PodEndpoint&) const = default;
};

// The batch size a pod runs as planned, from its containers: model::kPlannedBatchEnv where the
// server may grow its batches past it, else the variant's batch env `env`, in any container; 1
// without either.
int PlannedBatch(const nlohmann::json& containers, const std::string& env);

// Fills the weight and batch_ms of `pod` (a pod of `task`) from the pipeline's profile of its
// variant on its class, its batch capped at the variant's largest; left as they are where the
// pipeline does not say.
void Profile(const model::Pipeline& pipeline, const std::string& task, PodEndpoint& pod);

// The pod's Ready condition is True and no deletion is under way. Any JSON: false when it is
// not a pod.
bool PodReady(const nlohmann::json& pod);

// The pods of `pipeline` that may take requests, by task: labelled pipescale.io/pipeline and
// pipescale.io/task, with an address, the Ready condition True and no deletion under way. The
// port is the container port named "http", else the first declared, else kDefaultModelPort.
// Each is profiled (Profile): its weight is what one replica of its variant serves on its
// hardware class at the batch size in its environment (b * 1000 / d(b)); 1 where not known.
std::map<std::string, std::vector<PodEndpoint>> ReadyEndpoints(
    const model::Pipeline& pipeline, const std::vector<nlohmann::json>& pods);

// The pod has started and awaits its readiness: phase Running, each container running, not
// Ready, and no deletion under way. Any JSON: false when it is not a pod.
bool PodStarting(const nlohmann::json& pod);

// The pods of `pipeline` started and not yet Ready (PodStarting), by task, as ReadyEndpoints
// gives the Ready ones: a router probes each itself and calls it once it answers
// (router/starting.h), ahead of the kubelet's next probe and the status's way back to it.
std::map<std::string, std::vector<PodEndpoint>> StartingEndpoints(
    const model::Pipeline& pipeline, const std::vector<nlohmann::json>& pods);

// The pods of `pipeline` restarting, by task: not Ready, no deletion under way, and a container
// that has run and ended (terminated now, or before: restartCount above 0): a crashed process the
// kubelet starts again in place, back within its start-up, unlike a pod still being scheduled
// or started for the first time, or one in crash-loop backoff (crashed again since).
std::map<std::string, int> RestartingPods(const model::Pipeline& pipeline,
                                          const std::vector<nlohmann::json>& pods);

}  // namespace pipescale::routing
