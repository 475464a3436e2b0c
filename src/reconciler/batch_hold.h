// FA2 changes a batch size only when the running batch no longer meets the SLOs at the plan's
// replicas or the new one needs fewer: a batch change the servers form restarts a Deployment's
// pods, and noise in the measured rate would otherwise flip between plans at every interval
// (one the router forms restarts nothing, but each flip is a PlanChanged). The servers' own
// queue follows the plan's batch.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/deployment_view.h"
#include "model/metrics_snapshot.h"
#include "model/pipeline.h"
#include "model/plan.h"
#include "model/status.h"
#include "reconciler/capacity.h"
#include "reconciler/planned.h"

namespace pipescale::reconciler {

// Hysteresis: a running batch is kept while the model puts every path within this share above
// its SLO (and the measured latencies meet them), where a new plan's must meet the SLO itself.
// On the demo's steady 8/s the measured rate wanders across the rate at which one of a task's
// batches gives way to another, and each interval flipped it.
inline constexpr double kKeepBand = 0.1;

// Puts back the batch sizes the operator applied (`applied`, the status's plan; null before the
// first) into `plan` when the Deployments still run them, they need no more replicas than the
// plan gives, and they meet every SLO at the workload (within kKeepBand unless a path's measured
// latency in `metrics` misses its SLO). A batch changed by hand is not the operator's and is not
// kept. A batch the router forms is kept the same way, but only while the plan meets the SLOs.
void HoldAppliedBatches(const model::Pipeline& pipeline, const model::Workload& workload,
                        const model::MetricsSnapshot& metrics, const model::AppliedPlan* applied,
                        const Deployments& deployments, model::Plan& plan);

// The queue of a model server that forms a task's batches (batchSize.env): the plan's own where
// it runs one (hpa's), else a wait to fill a batch no longer than the plan counted for the task
// (its queue_ms). Without one the server waits its own default (the emulated server's 1 s), and
// at a tenth of the load that made a batch a fifth of the requests were late. The wait is written
// with its batch and kept while that batch runs (`running`, the Deployment's now; null for a new
// one): an env change is a rolling restart, the plan's wait moves with every measured rate, and
// a batch fills sooner as the load rises, so the wait that binds is the lower load's, which the
// plan that set it counted. Batches of 1 never wait (but one that may grow, below), and none longer
// than the task's share of its tightest SLO (`budget_ms`, optimizer::TaskBudgetsMs): a saturated
// plan counts its queue as 1e9 ms, which no server takes (the emulated one refuses past an hour and
// would not start). While requests queue behind a busy server its batches may grow past the plan's
// (max_batch): to the largest the variant takes whose run on the task's class (`profile`, null when
// unknown) fits the budget twice after the wait (a request that finds such a batch running then
// waits in the next). A batch of 1 then waits 1 ms, not the server's default.
model::ServerQueue ServerQueueFor(const model::Variant& variant, const model::Profile* profile,
                                  const model::TaskPlan& task, const api::ManagedFields* running,
                                  double budget_ms);

// Whether a Deployment's rollout is unfinished: pods of an older template still run beside the
// updated ones, or the controller has not yet acted on a change to a Deployment that has pods.
bool RollingOut(const api::DeploymentView& deployment);

// A batch change is a rolling restart of the Deployment's pods. After stabilization, it waits,
// keeping the running batch size, while the Deployment's own rollout runs (always: changing it
// again restarts pods before their batch has served, and flipped fa2-cpu's batches every second
// while it scaled out), while any of the pipeline's Deployments still rolls out or
// while the scale-down window keeps more replicas than the plan asks (unless a path's measured
// latency already misses its SLO), and whenever the class lacks room, after the plan's own
// scale-outs, for the surge pods a rollout starts with, and while none of the Deployment's pods
// is Ready yet (a wake from zero: the change would replace pods before their first answer). A
// running batch past the variant's batchSize.max is never kept. Returns "<deployment> (<why>)" for
// each Deployment whose batch change waits.
std::vector<std::string> HoldBatchesDuringRollouts(const model::Pipeline& pipeline,
                                                   const Deployments& deployments,
                                                   const model::MetricsSnapshot& metrics,
                                                   const std::optional<ClusterCapacity>& capacity,
                                                   std::vector<PlannedDeployment>& planned);

}  // namespace pipescale::reconciler
