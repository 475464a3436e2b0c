// spec.tasks[].minReplicas, applied to any optimizer's plan: a task planned below its floor runs
// more replicas of what the plan chose for it (its largest entry), at that class's price, and the
// plan says what the floor costs. Where a pod's restart would cost a task's paths their SLO, a
// second replica keeps one serving while the other starts (issue 48). Pure.
#pragma once

#include "model/pipeline.h"
#include "model/plan.h"

namespace pipescale::optimizer {

// Raises each task of `plan` to its minReplicas (within its class's maxReplicas), adds their
// price to the plan's cost and a note per task raised; a plan that meets every floor is unchanged.
// A task the plan runs nowhere (an infeasible plan's) is left as it is: there is nothing to copy.
// Where tasks with no minReplicas run one replica (and the pipeline does not scale to zero), one
// note names them and what a second replica each would cost: a restart of such a pod holds its
// paths' requests at the door for its start-up, and a killed one loses what it held. Applied
// twice, the same as once.
void ApplyReplicaFloors(const model::Pipeline& pipeline, model::Plan& plan);

}  // namespace pipescale::optimizer
