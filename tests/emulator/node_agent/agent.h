// The node agent: plays the kubelet for the emulated nodes. Every Pod the scheduler binds to
// one of them becomes local processes (one per container whose image it knows) on the pod's
// own loopback address; it reports their status, runs readiness probes, restarts containers
// by restartPolicy and stops them with the pod's grace period.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "kube/client.h"
#include "kube/informer.h"
#include "node_agent/container.h"
#include "node_agent/leases.h"
#include "node_agent/nodes.h"
#include "node_agent/pod_status.h"

namespace pipescale::emulator {

struct AgentOptions {
  std::string nodes_file;
  std::map<std::string, std::string> images;  // image reference -> local binary
  std::string work_dir;
  int network = 1;  // pod addresses 127.<network>.x.y
  bool delete_nodes_on_exit = false;
};

class Agent {
 public:
  Agent(const kube::Client& client, AgentOptions options);
  ~Agent();
  void Run(const std::atomic<bool>& stop);

 private:
  struct ContainerState {
    std::unique_ptr<Container> process;
    ContainerView view;
    int probe_successes = 0, probe_failures = 0;
    std::chrono::steady_clock::time_point next_probe{}, next_restart{};
    int backoff_seconds = 1;
  };
  struct PodState {
    std::string uid, ns, name, node, ip;
    nlohmann::json spec;
    std::vector<ContainerState> containers;
    nlohmann::json reported;
    std::string start_time;
  };

  void Sync();
  void Admit(const nlohmann::json& pod);
  void StartContainer(PodState& pod, size_t i);
  void Tend(PodState& pod);
  void Probe(PodState& pod, ContainerState& c, const nlohmann::json& spec);
  bool Terminate(PodState& pod, const nlohmann::json* object);
  // The kubelet's final delete of a pod nothing of which runs any more.
  void RemovePod(const std::string& ns, const std::string& name);
  void Report(PodState& pod, const nlohmann::json& object);
  void Event(const PodState& pod, const std::string& container, const std::string& type,
             const std::string& reason, const std::string& message);
  // The container's environment; empty optional with `error` when a reference cannot be read.
  std::optional<std::map<std::string, std::string>> Environment(const PodState& pod,
                                                                const nlohmann::json& container,
                                                                std::string& error);
  std::map<std::string, std::string> ServiceAccountFiles(const PodState& pod,
                                                         const nlohmann::json& container,
                                                         std::string& error);
  std::string Binary(const std::string& image) const;
  std::string NextAddress();

  // Until a pod changes (the watch says so) or `most` has passed: pods are tended between.
  void WaitForChange(std::chrono::milliseconds most);

  const kube::Client& client_;
  AgentOptions options_;
  Nodes nodes_;
  NodeLeases leases_;
  std::mutex changed_mu_;
  std::condition_variable changed_cv_;
  bool changed_ = false;
  kube::Informer pods_;  // indexed by node, so a sync reads only this agent's pods
  kube::Informer pipelines_;
  std::map<std::string, PodState> states_;  // by namespace/name
  int next_address_ = 0;
};

}  // namespace pipescale::emulator
