// The baseline users run today, on the same cluster, pods and router: the Kubernetes
// HorizontalPodAutoscaler's rule applied to each task alone, on the deployment an engineer makes
// without pipescale (optimizer/baseline_deployment.h: its class, dynamic batcher and target).
#pragma once

#include <optional>

#include "model/pipeline.h"
#include "model/plan.h"
#include "optimizer/baseline_deployment.h"
#include "optimizer/registry.h"

namespace pipescale::optimizer {

// HPA's default tolerance: a ratio of metric to target within 1 +- 0.1 keeps the replicas.
inline constexpr double kHpaTolerance = 0.1;

// The HPA's replica calculator on a utilisation target (GetResourceReplicas in
// pkg/controller/podautoscaler/replica_calculator.go, v1.30), the one rule `hpa` means
// wherever it runs (the gym's port of the controller, the operator's registry entry):
// `busy_share` is the mean busy share of a Ready pod (CPU usage over request, as
// metrics-server reports it; the model servers' pipescale_model_busy_seconds_total), `ready`
// the Ready pods, `current` the Deployment's replicas, `target` averageUtilization in (0, 1].
// Usage is truncated to whole percent (GetResourceUtilizationRatio); within the tolerance the
// replicas stay, else ceil(ratio x ready). On a scale-up the pods not Ready count at 0%
// ("rebalanceIgnored"), and it is dropped if that brings the ratio within tolerance or below 1.
// nullopt without a Ready pod ("no metrics for any ready pods"): the caller keeps what runs.
std::optional<int> HpaUtilizationReplicas(double busy_share, int ready, int current, double target);

// The HPA as the operator runs it: per task, on DeployBaseline's class and batch (default knobs:
// a 70% target), HpaUtilizationReplicas on the busy share the model pods measured
// (input.utilization, input.ready) against the replicas running (input.running); at least 1, at
// most the class's maxReplicas (or kMaxReplicas). A task running with no reading (no Ready pod,
// or Prometheus without the series) keeps its replicas: never scaled on missing data. A task
// not running yet starts at the count its rate needs at the target (rate / (target x what a
// replica serves at full batches)), the floor spec.minRate gives (in the workload already).
// Scale-down stabilisation is the reconciler's (spec.behavior), as for every optimizer. The
// plan's latencies are the tail model's (optimizer/tail.h), for the record: HPA does not plan
// for them, and says Feasible whatever they are.
model::Plan SolveHpa(const model::Pipeline& pipeline, const model::Workload& workload,
                     const PlannerInput& input, const BaselineKnobs& knobs = {});

}  // namespace pipescale::optimizer
