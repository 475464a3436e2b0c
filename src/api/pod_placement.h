// Where the operator's pods run and how long they stay on a lost node: replicas of one
// Deployment spread over the nodes (a node's loss takes one, not all), and tolerate a node that
// stopped answering only as long as a replacement would take to start, counted from its silence.
#pragma once

#include <nlohmann/json.hpp>

namespace pipescale::api {

// A topologySpreadConstraints list spreading the pods `match_labels` selects over the nodes
// where they fit (ScheduleAnyway: never left Pending for it).
nlohmann::json SpreadOverNodes(const nlohmann::json& match_labels);

// `tolerations` (a list, or anything else for none) with NoExecute tolerations of the taints
// node.kubernetes.io/not-ready and /unreachable, each unless the list already tolerates that
// taint (the user's choice stands). A lost node's pods are no longer Ready (the router stops
// sending to them at once); Kubernetes keeps them bound for 300 s by default. A replica waits as
// long as a new one would take to start (`seconds`, the class's start-up), then is replaced: at
// most twice the capacity-time the best choice in hindsight loses, whether the node comes back or
// not. The wait counts from when the pods went silent: a node reporting itself not ready does so
// at once, an unreachable one is marked after 40 s of silence (Kubernetes' default grace), which
// the router has already spent without its pods, so only what is left of `seconds` is waited.
nlohmann::json ToleratingNodeLoss(const nlohmann::json& tolerations, int seconds);

}  // namespace pipescale::api
