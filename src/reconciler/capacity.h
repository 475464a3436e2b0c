// What the cluster can still place for each of a pipeline's hardware classes, from the Nodes,
// Pods and PriorityClasses the operator watches, as a scheduler would count it: the allocatable
// of the Ready, schedulable nodes the class's nodeSelector and tolerations admit, less what their
// pods of the pipeline's priority or above request (the scheduler preempts the others for it),
// in replicas of the class. Also which of the pipeline's pods wait unscheduled.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/deployment_view.h"
#include "model/cluster_capacity.h"
#include "model/pipeline.h"

namespace pipescale::reconciler {

using model::ClassCapacity;
using model::Unschedulable;

// A class with no room left whose nodes run pods of a higher priority than the pipeline's: the
// pipeline yields the class to them.
// Or (share set) a class whose pool the arbiter divides, the pipeline held to a share of it.
struct Yielded {
  std::string hardware_class;
  // Pods of a higher priority, by their pipeline (ns/name); with share, the others' shares.
  std::map<std::string, int> holders;
  std::optional<int> share;
  int pool = 0;  // with share: the replicas the pool holds
};

// The nodes a class admits, seen as one pool of the resource its replicas need most of (an
// extended resource such as nvidia.com/gpu, else cpu): every pipeline whose classes admit the
// same nodes shares it, and the arbiter divides it among them (reconciler/arbiter.h).
struct PoolView {
  struct Holding {
    double units = 0;  // of the pool's resource
    int pods = 0;
    int priority = 0;
  };
  std::string key;      // the resource and the nodes; "" when the class needs no such resource
  double unit = 0;      // what one replica of the class takes of it
  double capacity = 0;  // the nodes' allocatable less what pods other than model pods request
  // What model pods on the nodes take, by pipeline and class (HolderKey).
  std::map<std::string, Holding> holders;
};

// How the watches and the work queue name a pipeline: "namespace/name".
std::string PipelineKey(const model::Pipeline& pipeline);
// How a pool's holdings and claims name a pipeline's class: "namespace/name@class".
std::string HolderKey(const std::string& pipeline, const std::string& hardware_class);

struct ClusterCapacity {
  std::vector<ClassCapacity> classes;  // in the spec's order
  std::vector<Unschedulable> unschedulable;
  std::vector<Yielded> yielded;
  int priority = 0;             // the pipeline's pods', as admission resolves it
  std::vector<PoolView> pools;  // by class, in the spec's order

  const ClassCapacity* Find(const std::string& hardware_class) const;
};

using Resources = std::map<std::string, double>;  // quantities by resource name

// What the count reads of a Node, decoded once from the Node watch.
struct NodeRoom {      // NOLINT(bugprone-exception-escape): json's moves may throw
  bool ready = false;  // Ready and schedulable
  nlohmann::json labels;
  nlohmann::json taints;
  Resources allocatable;
};
NodeRoom ReadNode(const nlohmann::json& node);

// What the count reads of a Pod, decoded once from the Pod watch.
struct PodShare {
  bool terminal = false;  // Succeeded or Failed: it takes no room
  std::string node;       // "" until bound
  Resources requests;
  std::string pipeline;   // "namespace/name" of the pipeline whose model it serves, else ""
  std::string router_of;  // "namespace/name" of the pipeline whose router it runs, else ""
  std::string ip;         // status.podIP, "" until it has one
  std::string hardware_class, task, variant;  // its pipescale.io labels
  std::optional<std::string> unschedulable;   // the scheduler's message, when it gave up on it
  int priority = 0;                           // spec.priority, as admission resolved it
};
PodShare ReadPod(const nlohmann::json& pod);
// PodShare::router_of of a pod as the cluster gives it (an index of the pods informer).
std::string RouterOf(const nlohmann::json& pod);

// What the count reads of a PriorityClass (scheduling.k8s.io/v1).
struct PriorityClassValue {
  int value = 0;
  bool global_default = false;  // the priority of pods that name no class
};
PriorityClassValue ReadPriorityClass(const nlohmann::json& priority_class);

// The cluster as the Node and Pod watches say, kept from their events: each node's room and
// what its pods request, and each pipeline's pods. A reconcile reads a pipeline's capacity from
// it in time that grows with the nodes, not the pods, and a class's answer is kept until a node
// or pod changes (every pipeline of a class shares it). Thread-safe.
class ClusterView {
 public:
  ClusterView();
  ~ClusterView();
  ClusterView(const ClusterView&) = delete;
  ClusterView& operator=(const ClusterView&) = delete;

  // An object as it now is (added or changed), or gone. Keys as the informers give them.
  void SetNode(const std::string& key, NodeRoom node);
  void RemoveNode(const std::string& key);
  void SetPod(const std::string& key, const PodShare& pod);
  void RemovePod(const std::string& key);
  void SetPriorityClass(const std::string& name, PriorityClassValue value);
  void RemovePriorityClass(const std::string& name);

  bool HasNodes() const;
  ClusterCapacity Capacity(const model::Pipeline& pipeline) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The same from lists of `nodes`, `pods` (every namespace's: they all take room) and
// `priority_classes`.
ClusterCapacity ComputeCapacity(const model::Pipeline& pipeline,
                                const std::vector<nlohmann::json>& nodes,
                                const std::vector<nlohmann::json>& pods,
                                const std::vector<nlohmann::json>& priority_classes = {});

// The pipeline with each class's maxReplicas lowered to what the cluster can run now, less
// the surge pods of the pipeline's unfinished rollouts (pods beyond a Deployment's
// spec.replicas, counted in status.replicas): they leave when the rollout ends, and a plan that
// counted their room as its own would leave the rollout no room to finish.
model::Pipeline WithinCapacity(const model::Pipeline& pipeline, const ClusterCapacity& capacity,
                               const std::map<std::string, api::DeploymentView>& deployments);

}  // namespace pipescale::reconciler
