// The reconciler's decision, as a pure function of what was observed: the plan, the Deployment
// writes that bring the cluster to it, the status to report and the events to emit. No I/O and
// no clock (the time is an input), so every policy here is unit-testable. What it reads is typed
// (Observe reads the objects' JSON, through api/); what it writes may carry JSON bodies api/
// builds. The steps live in files of their own: demand.h, stabilize.h, budget_guard.h,
// writes.h, status.h.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/config_map.h"
#include "api/deployment_view.h"
#include "api/object_meta.h"
#include "api/pipeline_parse.h"
#include "common/result.h"
#include "model/metrics_snapshot.h"
#include "model/plan.h"
#include "model/status.h"
#include "optimizer/milp.h"
#include "reconciler/capacity.h"
#include "reconciler/memory.h"
#include "reconciler/router.h"
#include "reconciler/writes.h"

namespace pipescale::reconciler {

struct Observed {
  api::ObjectMeta meta;          // the InferencePipeline's metadata: its generation and uid
  model::PipelineStatus status;  // its status as read (api::ReadStatus)
  Deployments deployments;       // the pipeline's Deployments by name
  Result<model::MetricsSnapshot> metrics = Error{ErrorKind::kTransient, "not read"};
  double now = 0;  // unix seconds
  Memory memory;   // what the last decision remembered (or a new leader recalled)
  // The pipeline's routing ConfigMap as read (for optimizers with a data plane); nullopt when
  // it is absent.
  std::optional<api::ConfigMapView> routing_config_map;
  // What the cluster can place per hardware class; nullopt when the operator sees no nodes
  // (then only the spec's limits apply).
  std::optional<ClusterCapacity> capacity;
  RouterObjects router;  // read when the pipeline asks for a router
  // What the router reads of the pipeline (api::PipelineObject::for_router).
  std::string router_pipeline;
  std::string router_cluster_role = "pipescale-router";  // what its RoleBinding grants
  // How the optimizers' MILPs are solved: the operator's in a child process
  // (solver/child_process.h); empty: CBC in this process.
  optimizer::MilpSolver milp_solver;
};

// An event to emit besides PlanChanged: reason and message.
struct Event {
  std::string reason;
  std::string message;
};

// What a pipeline needs of one hardware class: replicas, and the tasks among them (fewer
// replicas than tasks serve nothing: each runs at least one).
struct ClassNeed {
  int replicas = 0;
  int tasks = 0;
  double rps = 0;  // the pipeline's demand those replicas serve, every path's
  bool operator==(const ClassNeed&) const = default;
};

// clang-tidy 14 blames the implicit members of this aggregate for what its members' allocations
// may throw; nothing here is declared noexcept.
struct Decision {                                 // NOLINT(bugprone-exception-escape)
  std::vector<DeploymentWrite> writes;            // empty in Recommend mode and while holding
  model::PipelineStatus status;                   // the complete status to report
  std::vector<std::string> events;                // PlanChanged messages
  std::vector<Event> warnings;                    // e.g. Unschedulable, once per change
  std::vector<Event> notices;                     // Normal ones, e.g. QuerySizesShifted
  std::vector<Revert> reverts;                    // changes made outside the operator, put back
  Memory memory;                                  // to pass back next time
  std::optional<ConfigMapWrite> routing;          // Apply mode, when the tables changed
  std::vector<ObjectWrite> router;                // Apply mode: the router's objects (spec.router)
  std::optional<ConfigMapWrite> router_pipeline;  // and its graph, when it changed
  // When to look again; nullopt for an invalid spec, which waits for the next generation.
  std::optional<double> requeue_after_seconds;
  std::optional<model::Plan> plan;  // the plan decided on, when there is one
  // With the plan, per class counted in a pool others share, what the pipeline needs of it: the
  // plan's, or where the plan took all the class's limit, a plan's given the whole pool. What
  // the arbiter divides the pool by (arbiter.h).
  std::map<std::string, ClassNeed> needs;
  std::map<std::string, double> surges;  // the paths planned for their recent rates (surge.h)
  // FA2's feedback: every path's planned rate over its measured one (slo_feedback.h); empty for
  // an optimizer without it.
  std::map<std::string, double> headroom;
};

// `parsed` is the pipeline's spec as read (api::PipelineObject::parsed). The decision starts
// from observed.status and changes what it decides.
Decision Decide(const Observed& observed, const api::ParsedPipeline& parsed);

}  // namespace pipescale::reconciler
