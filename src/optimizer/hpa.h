// The baseline users run today, on the same cluster, pods and router: the Kubernetes
// HorizontalPodAutoscaler's rule applied to each task alone, with its utilisation measured
// against what a replica serves at batch size 1.
#pragma once

#include "model/pipeline.h"
#include "model/plan.h"
#include "optimizer/registry.h"

namespace pipescale::optimizer {

// The utilisation target, as HPA users typically set it (Knative's KPA defaults to 70% too).
inline constexpr double kHpaTarget = 0.7;
// HPA's default tolerance: a ratio of metric to target within 1 +- 0.1 keeps the replicas.
inline constexpr double kHpaTolerance = 0.1;

// A port of the HPA's replica calculator (pkg/controller/podautoscaler): per task, on the first
// hardware class its most accurate variant profiles, at batch size 1, utilisation = rate /
// (current replicas x 1000 / d(1)); desired = ceil(current x utilisation / kHpaTarget) unless
// the ratio is within the tolerance; at least 1, at most the class's maxReplicas (or
// kMaxReplicas). The current replicas are the running ones (input.running), or none: then the
// desired count from scratch.
// Scale-down stabilisation is the reconciler's (spec.behavior), as for every optimizer. The
// plan's latencies are the tail model's (optimizer/tail.h), for the record: HPA does not plan
// for them, and says Feasible whatever they are.
model::Plan SolveHpa(const model::Pipeline& pipeline, const model::Workload& workload,
                     const PlannerInput& input);

}  // namespace pipescale::optimizer
