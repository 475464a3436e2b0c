// Loki's rolling change: a plan stops at most a quarter of the Ready pods of the Deployments
// running now, as a Deployment's default maxUnavailable lets a rollout; a larger change of
// variants is made in steps, each once the last one's pods are Ready.
#pragma once

#include <map>
#include <string>

#include "model/pipeline.h"
#include "model/plan.h"
#include "optimizer/loki_model.h"
#include "optimizer/milp.h"

namespace pipescale::optimizer::loki {

// The RunningKey (pool.h) of a vertex's Deployment on config `c`'s class.
std::string RunningKeyOf(const model::PipelineSpec& spec, const Vertex& vertex, const Config& c);

// Each (task, variant, class) of the plan, by RunningKey, with its replicas.
std::map<std::string, int> ReplicasByKey(const model::Plan& plan);

// The Ready pods of the running Deployments (by RunningKey) that `plan` does not keep.
int StoppedPods(const model::Plan& plan, const std::map<std::string, int>& running);

// The pods `plan` runs beyond the Ready pods of its running Deployments: those it starts, or
// still waits for.
int StartedPods(const model::Plan& plan, const std::map<std::string, int>& running);

// How many Ready pods one plan may stop: of the pods, a quarter at least one (a Deployment's
// default maxUnavailable) may be unavailable, those still starting first. On a full cluster every
// variant a plan starts stops a Ready pod for its start-up; a whole new mix at once left paths
// with no Ready pod, and plans a second apart each stopping their quarter did as much.
int StopLimit(const std::map<std::string, int>& running, int starting);

// Raises each variant's bound on replicas to what runs of it, so that a plan may keep pods the
// demand no longer needs (after it fell) rather than stop more than LimitStops allows.
void RoomForRunning(const model::Pipeline& pipeline, const std::map<std::string, int>& running,
                    Instance& in);

// Lets the model stop at most `limit` of the Ready pods in `running`: per running Deployment,
// stopped >= ready - its replicas in the plan, and the stopped sum to at most `limit`.
void LimitStops(const model::Pipeline& pipeline, const Instance& in, const Columns& col,
                const std::map<std::string, int>& running, int limit, Milp& milp);

}  // namespace pipescale::optimizer::loki
