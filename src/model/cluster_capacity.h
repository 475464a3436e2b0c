// What the cluster can still place for a pipeline's hardware classes, and which of its pods wait
// unscheduled: the reconciler counts it (reconciler/capacity.h) and the status reports it.
#pragma once

#include <algorithm>
#include <optional>
#include <string>

namespace pipescale::model {

struct ClassCapacity {
  std::string hardware_class;
  int nodes = 0;      // Ready, schedulable nodes that admit the class
  int placeable = 0;  // more replicas that fit now
  int scheduled = 0;  // the pipeline's replicas of the class bound to a node
  // Of placeable, the replicas that fit only once the scheduler preempts pods of a lower
  // priority than the pipeline's (spec.priorityClassName).
  int preemptible = 0;
  // Why nothing more fits, when placeable is 0: the resource that ran out, or that no node
  // admits the class.
  std::string full_reason;
  // The replicas of the class its nodes hold for model pods, which the pipelines whose classes
  // admit the same nodes share (0: not counted), and of them the pipeline's share while the
  // arbiter divides them among contending pipelines (reconciler/arbiter.h).
  int pool = 0;
  std::optional<int> share;

  // The most replicas of the class the pipeline can run now.
  int Limit() const {
    const int room = scheduled + placeable;
    return share ? std::min(room, *share) : room;
  }
  bool operator==(const ClassCapacity&) const = default;
};

// Pods of one of the pipeline's Deployments that the scheduler could not place.
struct Unschedulable {
  std::string deployment;
  int pods = 0;
  std::string message;  // the scheduler's, e.g. "0/6 nodes are available: ..."

  bool operator==(const Unschedulable&) const = default;
};

}  // namespace pipescale::model
