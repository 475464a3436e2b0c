// What a decision reports in the InferencePipeline's status: the plan as applied (replicas
// after stabilization and the budget), the Feasible condition, the change since the last
// report for the PlanChanged event, and what runs while there is no plan to report.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "api/deployment_view.h"
#include "model/metrics_snapshot.h"
#include "model/pipeline.h"
#include "model/plan.h"
#include "model/status.h"
#include "optimizer/registry.h"
#include "reconciler/budget_guard.h"
#include "reconciler/planned.h"
#include "reconciler/query_mix.h"

namespace pipescale::reconciler {

// status.plan: `plan` with each task's Deployment and the replicas and batch size it is set to.
model::AppliedPlan PlanStatus(const model::Plan& plan,
                              const std::vector<PlannedDeployment>& planned);

// "detect 3->4 replicas, batch 8->8" for every Deployment whose replicas or batch changed
// between two status.plan values (`before` is null before the first); "" when none did.
// Deployments are told apart the way the optimizer places them (by variant or by hardware
// class).
std::string PlanDiff(const model::AppliedPlan* before, const model::AppliedPlan& after,
                     optimizer::Placement placement);

// status.observed.dataPlane: what the router did over the last minute (drops by reason,
// reroutes, spill share, Kairos's queue, rows per batch formed) and, for a plan that scales
// accuracy, the accuracy served (the variants that answered, each normalised to its task's
// most accurate, multiplied along the tasks) beside the planned.
model::ObservedDataPlane DataPlaneStatus(const model::Pipeline& pipeline, const model::Plan& plan,
                                         const model::DataPlaneSnapshot& observed);

// status.observed.querySizes: the mix planned for and where it came from (the spec, or the
// router's measurement once it moved past kMixShift), the mix measured now and how far apart.
model::QuerySizesRecord QueryMixStatus(const MixStep& step);

// The Feasible condition: over budget, overloaded, infeasible (with the plan's reasons) or met.
void SetFeasible(std::vector<model::Condition>& conditions, const model::Plan& plan,
                 const GuardOutcome& guard, const Spend& spend, long generation, double now);

// The replicas and cost of what the pipeline's Deployments run, by hardware-class label; those
// named in `except` are left out.
Spend RunningSpend(const model::Pipeline& pipeline,
                   const std::map<std::string, api::DeploymentView>& deployments,
                   const std::set<std::string>& except = {});

}  // namespace pipescale::reconciler
