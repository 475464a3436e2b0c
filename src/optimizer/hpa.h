// The baseline users run today, on the same cluster, pods and router: the Kubernetes
// HorizontalPodAutoscaler's rule applied to each task alone, on the deployment an engineer makes
// without pipescale (optimizer/baseline_deployment.h: its class, dynamic batcher and target).
#pragma once

#include "model/pipeline.h"
#include "model/plan.h"
#include "optimizer/baseline_deployment.h"
#include "optimizer/registry.h"

namespace pipescale::optimizer {

// HPA's default tolerance: a ratio of metric to target within 1 +- 0.1 keeps the replicas.
inline constexpr double kHpaTolerance = 0.1;

// A port of the HPA's replica calculator (pkg/controller/podautoscaler): per task, on
// DeployBaseline's class and batch (default knobs: a 70% target), utilisation = rate / (current
// replicas x what a replica serves at full batches); desired = ceil(current x utilisation /
// target) unless the ratio is within the tolerance; at least 1, at most the class's maxReplicas
// (or kMaxReplicas). The current replicas are the running ones (input.running), or none: then
// the desired count from scratch. spec.minRate is in the workload already (the reconciler's).
// Scale-down stabilisation is the reconciler's (spec.behavior), as for every optimizer. The
// plan's latencies are the tail model's (optimizer/tail.h), for the record: HPA does not plan
// for them, and says Feasible whatever they are.
model::Plan SolveHpa(const model::Pipeline& pipeline, const model::Workload& workload,
                     const PlannerInput& input, const BaselineKnobs& knobs = {});

}  // namespace pipescale::optimizer
